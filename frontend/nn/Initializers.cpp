// Parameter initializers.
#include "frontend/nn/Initializers.h"

#include <algorithm>
#include <cmath>

namespace kiln::nn {

Fans denseFans(int64_t inputs, int64_t units) { return {inputs, units}; }

Fans convFans(const Shape &filterShape, Layout layout) {
  // An invalid shape gets default fans: Layer::weight reports it before any
  // initializer runs. A valid one bounds every product below by 2^53.
  if (filterShape.size() != 4 || !ir::checkedNumElements(filterShape))
    return {};
  int64_t outChannels = filterShape[0];
  int64_t inChannels = layout == Layout::NHWC ? filterShape[3] : filterShape[1];
  int64_t window =
      layout == Layout::NHWC ? filterShape[1] * filterShape[2] : filterShape[2] * filterShape[3];
  return {inChannels * window, outChannels * window};
}

HostTensor glorotUniform(DType dtype, const Shape &shape, Fans fans, Rng &rng) {
  double limit = std::sqrt(6.0 / static_cast<double>(std::max<int64_t>(fans.in + fans.out, 1)));
  return HostTensor::randomUniform(dtype, shape, rng, -limit, limit);
}

HostTensor heNormal(DType dtype, const Shape &shape, Fans fans, Rng &rng) {
  double stddev = std::sqrt(2.0 / static_cast<double>(std::max<int64_t>(fans.in, 1)));
  return HostTensor::randomNormal(dtype, shape, rng, 0.0, stddev);
}

HostTensor zeros(DType dtype, const Shape &shape, Fans, Rng &) { return HostTensor(dtype, shape); }

HostTensor ones(DType dtype, const Shape &shape, Fans fans, Rng &rng) {
  return constantInitializer(1.0)(dtype, shape, fans, rng);
}

Initializer constantInitializer(double value) {
  return [value](DType dtype, const Shape &shape, Fans, Rng &) {
    HostTensor tensor(dtype, shape);
    for (int64_t i = 0; i < tensor.numElements(); ++i)
      tensor.setDouble(i, value);
    return tensor;
  };
}

Initializer uniformInitializer(double low, double high) {
  return [low, high](DType dtype, const Shape &shape, Fans, Rng &rng) {
    return HostTensor::randomUniform(dtype, shape, rng, low, high);
  };
}

Initializer normalInitializer(double mean, double stddev) {
  return [mean, stddev](DType dtype, const Shape &shape, Fans, Rng &rng) {
    return HostTensor::randomNormal(dtype, shape, rng, mean, stddev);
  };
}

} // namespace kiln::nn
