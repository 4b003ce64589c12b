// nn::BatchNorm.
#include "frontend/nn/BatchNorm.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln::nn {

BatchNorm::BatchNorm(BatchNormConfig config) : ConfiguredLayer("batch_norm", std::move(config)) {}

Tensor BatchNorm::forward(Graph &graph, Tensor x, const std::source_location &loc) {
  int64_t axis = config_.axis < 0 ? config_.axis + x.rank() : config_.axis;
  if (axis < 0 || axis >= x.rank())
    return fail(graph, fmt::format("channel axis {} is out of range for {}", config_.axis, x.str()),
                loc, ErrorCode::ShapeMismatch);
  int64_t channels = x.dim(axis);
  DType dtype = paramDType(x);
  Fans fans{channels, channels};
  Tensor scale = weight(graph, "weight", {channels}, dtype, ones, fans, loc);
  Tensor bias = weight(graph, "bias", {channels}, dtype, zeros, fans, loc);
  Tensor mean = weight(graph, "running_mean", {channels}, dtype, zeros, fans, loc, false);
  Tensor var = weight(graph, "running_var", {channels}, dtype, ones, fans, loc, false);
  return batchNorm(x, scale, bias, mean, var, config_.axis, config_.epsilon, loc);
}

} // namespace kiln::nn
