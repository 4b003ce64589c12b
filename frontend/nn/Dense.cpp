// nn::Dense.
#include "frontend/nn/Dense.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln::nn {

Dense::Dense(DenseConfig config) : ConfiguredLayer("dense", std::move(config)) {}

Dense::Dense(int64_t units, Activation activation, bool useBias, std::string name)
    : Dense(DenseConfig{
          .units = units, .activation = activation, .useBias = useBias, .name = std::move(name)}) {}

Tensor Dense::forward(Graph &graph, Tensor x, const std::source_location &loc) {
  if (config_.units <= 0)
    return fail(graph, fmt::format("units must be positive, got {}", config_.units), loc);
  if (x.rank() < 2)
    return fail(graph,
                fmt::format("input must have rank >= 2 ([batch, ..., features]), got {}", x.str()),
                loc, ErrorCode::ShapeMismatch);
  int64_t inputs = x.dim(-1);
  DType dtype = paramDType(x);
  Tensor kernel = weight(graph, "weight", {inputs, config_.units}, dtype, config_.kernelInitializer,
                         denseFans(inputs, config_.units), loc);
  Tensor y = matmul(x, kernel, {}, loc);
  if (config_.useBias)
    y = add(y,
            weight(graph, "bias", {config_.units}, dtype, config_.biasInitializer,
                   denseFans(inputs, config_.units), loc),
            loc);
  return applyActivation(y, config_.activation, loc);
}

} // namespace kiln::nn
