// Parameter initializers (Glorot, He, constants, uniform, normal) and the fan
// computations they need. All draw from a kiln::Rng, so a seed fixes them.
#pragma once

#include "frontend/Padding.h"
#include "frontend/Tensor.h"
#include "support/HostTensor.h"

#include <functional>

namespace kiln::nn {

/// Fan-in and fan-out of a weight: how many inputs feed one output and how
/// many outputs one input feeds.
struct Fans {
  int64_t in = 1;
  int64_t out = 1;
};

/// Fans of a dense kernel [inputs, units].
Fans denseFans(int64_t inputs, int64_t units);
/// Fans of a conv2d filter (receptive field times channels, as Keras and
/// PyTorch count them): in = I * KH * KW, out = O * KH * KW.
Fans convFans(const Shape &filterShape, Layout layout);

/// Makes a parameter's initial value. Layer::weight calls it with a shape it
/// has checked (at most 2^53 elements, within the machine's memory) and fails
/// the layer when the result is not a tensor of the requested dtype and shape.
using Initializer = std::function<HostTensor(DType, const Shape &, Fans, Rng &)>;

/// Uniform in [-limit, limit) with limit = sqrt(6 / (fanIn + fanOut)) (Glorot
/// & Bengio 2010; Keras's default kernel initializer).
HostTensor glorotUniform(DType dtype, const Shape &shape, Fans fans, Rng &rng);
/// Normal(0, sqrt(2 / fanIn)) (He et al. 2015), untruncated as in PyTorch's
/// kaiming_normal_; the choice for ReLU networks.
HostTensor heNormal(DType dtype, const Shape &shape, Fans fans, Rng &rng);
HostTensor zeros(DType dtype, const Shape &shape, Fans fans, Rng &rng);
HostTensor ones(DType dtype, const Shape &shape, Fans fans, Rng &rng);

/// Every element equal to `value`.
Initializer constantInitializer(double value);
/// Uniform in [low, high).
Initializer uniformInitializer(double low, double high);
/// Normal(mean, stddev).
Initializer normalInitializer(double mean, double stddev);

} // namespace kiln::nn
