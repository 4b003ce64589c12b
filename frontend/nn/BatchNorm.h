// nn::BatchNorm: inference batch normalization over a channel axis.
#pragma once

#include "frontend/nn/Layer.h"

namespace kiln::nn {

struct BatchNormConfig {
  /// The channel axis: 1 for nchw, -1 for nhwc.
  int64_t axis = 1;
  /// PyTorch's default (Keras uses 1e-3).
  double epsilon = 1e-5;
  std::string name = {};
};

/// Parameters (PyTorch's names): "weight" (ones) and "bias" (zeros),
/// trainable, and "running_mean" (zeros) and "running_var" (ones), frozen:
/// statistics, not learned by gradient, which is why a folding pass may fold
/// the whole op into the preceding convolution.
class BatchNorm : public ConfiguredLayer<BatchNormConfig> {
public:
  explicit BatchNorm(BatchNormConfig config = {});

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;
};

} // namespace kiln::nn
