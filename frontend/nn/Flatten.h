// nn::Flatten: [N, d1, d2, ...] -> [N, d1 * d2 * ...].
#pragma once

#include "frontend/nn/Layer.h"

namespace kiln::nn {

/// Keeps the batch axis and collapses the rest in row-major order (for nchw
/// images that is PyTorch's C, H, W order, not Keras's H, W, C).
class Flatten : public Layer {
public:
  explicit Flatten(std::string name = {});

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;
};

} // namespace kiln::nn
