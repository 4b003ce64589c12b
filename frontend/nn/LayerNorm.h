// nn::LayerNorm: layer normalization with a learned scale and bias.
#pragma once

#include "frontend/nn/Layer.h"

namespace kiln::nn {

struct LayerNormConfig {
  /// Normalizes over axes [axis, rank); weight and bias have shape x.shape[axis:].
  int64_t axis = -1;
  /// PyTorch's and GPT-2's default (Keras uses 1e-3).
  double epsilon = 1e-5;
  std::string name = {};
};

/// Parameters "weight" (ones) and "bias" (zeros).
class LayerNorm : public ConfiguredLayer<LayerNormConfig> {
public:
  explicit LayerNorm(LayerNormConfig config = {});

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;
};

} // namespace kiln::nn
