// nn::GRU, unrolled over its static sequence length.
#include "frontend/nn/GRU.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln::nn {

GRU::GRU(GRUConfig config) : Layer("gru", config.name), config_(std::move(config)) {}

GRU::GRU(int64_t units, bool returnSequences, std::string name)
    : GRU(GRUConfig{.units = units, .returnSequences = returnSequences, .name = std::move(name)}) {}

Tensor GRU::forward(Graph &graph, Tensor x, const std::source_location &loc) {
  return run(graph, x, {}, /*wantStates=*/false, loc).output;
}

RecurrentOutputs GRU::withState(Graph &graph, Tensor x, Tensor h0, std::source_location loc) {
  RecurrentOutputs outputs;
  outputs.output = call(graph, {x}, loc, [&] {
    outputs = run(graph, x, h0, /*wantStates=*/true, loc);
    return outputs.output;
  });
  return outputs;
}

RecurrentOutputs GRU::run(Graph &graph, Tensor x, Tensor h0, bool wantStates,
                          const std::source_location &loc) {
  int64_t units = config_.units;
  auto failed = [&](const std::string &message, ErrorCode code = ErrorCode::InvalidArgument) {
    RecurrentOutputs outputs;
    outputs.output = fail(graph, message, loc, code);
    return outputs;
  };
  if (units <= 0 || units > ir::kMaxElements / 3)
    return failed(fmt::format("units must be in [1, 2^53 / 3], got {}", units));
  if (config_.layers < 1)
    return failed(fmt::format("layers must be at least 1, got {}", config_.layers));
  if (x.rank() != 3 || x.dim(1) == 0)
    return failed(
        fmt::format("input must be [batch, time, features] with time >= 1, got {}", x.str()),
        ErrorCode::ShapeMismatch);
  int64_t directions = config_.bidirectional ? 2 : 1;
  Shape stateShape{config_.layers * directions, x.dim(0), units};
  if (!h0.empty() && (h0.graph() != &graph || h0.shape() != stateShape))
    return failed(fmt::format("h0 must be a {} tensor of this graph, got {}",
                              ir::TensorType{x.dtype(), stateShape}.str(), h0.str()),
                  ErrorCode::ShapeMismatch);
  DType dtype = paramDType(x);
  RecurrentStackShape shape{.layers = config_.layers,
                            .bidirectional = config_.bidirectional,
                            .returnSequences = config_.returnSequences,
                            .wantStates = wantStates};
  return stackRecurrences(
      x, h0, {}, shape,
      [&](int64_t layer, bool reverse, Tensor input, const RecurrenceOptions &options) {
        std::string suffix =
            (layer > 0 ? fmt::format("_l{}", layer) : std::string()) + (reverse ? "_reverse" : "");
        int64_t features = input.dim(2);
        Tensor kernel = weight(graph, "weight" + suffix, {features, 3 * units}, dtype,
                               config_.kernelInitializer, denseFans(features, 3 * units), loc);
        Tensor recurrent =
            weight(graph, "recurrent_weight" + suffix, {units, 3 * units}, dtype,
                   config_.recurrentInitializer, denseFans(units, 3 * units), loc);
        Tensor bias = weight(graph, "bias" + suffix, {3 * units}, dtype, zeros,
                             {features, 3 * units}, loc);
        Tensor recurrentBias = weight(graph, "recurrent_bias" + suffix, {3 * units}, dtype,
                                      zeros, {units, 3 * units}, loc);
        return gruSequence(input, kernel, recurrent, bias, recurrentBias, options,
                           kTorchGruGates, /*linearBeforeReset=*/true, loc);
      },
      loc);
}

} // namespace kiln::nn
