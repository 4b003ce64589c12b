// nn::Conv2D: a 2-D convolution layer with bias and activation.
#pragma once

#include "frontend/Padding.h"
#include "frontend/nn/Activation.h"
#include "frontend/nn/Layer.h"

#include <array>

namespace kiln::nn {

struct Conv2DConfig {
  int64_t filters = 0;
  std::array<int64_t, 2> kernel = {3, 3};
  std::array<int64_t, 2> stride = {1, 1};
  Padding padding = Padding::valid();
  std::array<int64_t, 2> dilation = {1, 1};
  int64_t groups = 1;
  Activation activation = Activation::Linear;
  bool useBias = true;
  Layout layout = Layout::NCHW;
  Initializer kernelInitializer = glorotUniform;
  Initializer biasInitializer = zeros;
  std::string name = {};
};

/// weight is [filters, C/groups, KH, KW] for nchw and [filters, KH, KW, C/groups]
/// for nhwc (the conv2d op's layouts); bias is [filters].
class Conv2D : public ConfiguredLayer<Conv2DConfig> {
public:
  explicit Conv2D(Conv2DConfig config);
  /// Keras's argument order: Conv2D(32, {3, 3}, Activation::Relu).
  Conv2D(int64_t filters, std::array<int64_t, 2> kernel, Activation activation = Activation::Linear,
         Padding padding = Padding::valid(), std::array<int64_t, 2> stride = {1, 1},
         Layout layout = Layout::NCHW, std::string name = {});

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;
};

} // namespace kiln::nn
