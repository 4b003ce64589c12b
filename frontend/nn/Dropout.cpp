// nn::Dropout.
#include "frontend/nn/Dropout.h"

#include <fmt/format.h>

namespace kiln::nn {

Dropout::Dropout(double rate, std::string name) : Layer("dropout", std::move(name)), rate_(rate) {}

Tensor Dropout::forward(Graph &graph, Tensor x, const std::source_location &loc) {
  if (!(rate_ >= 0.0 && rate_ < 1.0))
    return fail(graph, fmt::format("rate must be in [0, 1), got {}", rate_), loc);
  return x;
}

} // namespace kiln::nn
