// nn::Sequential.
#include "frontend/nn/Sequential.h"

namespace kiln::nn {

Sequential::Sequential() : Layer("sequential", {}) { opensScope_ = false; }

Tensor Sequential::forward(Graph &graph, Tensor x, const std::source_location &loc) {
  for (const std::unique_ptr<Layer> &layer : layers_)
    x = (*layer)(graph, x, loc);
  return x;
}

} // namespace kiln::nn
