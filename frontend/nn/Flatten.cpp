// nn::Flatten.
#include "frontend/nn/Flatten.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln::nn {

Flatten::Flatten(std::string name) : Layer("flatten", std::move(name)) {}

Tensor Flatten::forward(Graph &graph, Tensor x, const std::source_location &loc) {
  if (x.rank() < 2)
    return fail(graph, fmt::format("input must have rank >= 2 ([batch, ...]), got {}", x.str()),
                loc, ErrorCode::ShapeMismatch);
  return flatten(x, 1, loc);
}

} // namespace kiln::nn
