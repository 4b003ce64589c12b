// nn::LayerNorm.
#include "frontend/nn/LayerNorm.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln::nn {

LayerNorm::LayerNorm(LayerNormConfig config) : ConfiguredLayer("layer_norm", std::move(config)) {}

Tensor LayerNorm::forward(Graph &graph, Tensor x, const std::source_location &loc) {
  int64_t axis = config_.axis < 0 ? config_.axis + x.rank() : config_.axis;
  if (axis < 0 || axis >= x.rank())
    return fail(graph, fmt::format("axis {} is out of range for {}", config_.axis, x.str()), loc,
                ErrorCode::ShapeMismatch);
  Shape normalized(x.shape().begin() + axis, x.shape().end());
  int64_t count = 1;
  for (int64_t size : normalized)
    count *= size;
  DType dtype = paramDType(x);
  Tensor scale = weight(graph, "weight", normalized, dtype, ones, {count, count}, loc);
  Tensor bias = weight(graph, "bias", normalized, dtype, zeros, {count, count}, loc);
  return layerNorm(x, scale, bias, config_.axis, config_.epsilon, loc);
}

} // namespace kiln::nn
