// nn::GRU, unrolled over its static sequence length.
#include "frontend/nn/GRU.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln::nn {

GRU::GRU(GRUConfig config) : ConfiguredLayer("gru", std::move(config)) {}

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
  RecurrentStackShape stack{.layers = config_.layers,
                            .bidirectional = config_.bidirectional,
                            .returnSequences = config_.returnSequences,
                            .wantStates = wantStates};
  if (auto problem = checkRecurrentInputs(x, {{h0, "h0"}}, 3, units, stack)) {
    RecurrentOutputs outputs;
    outputs.output = fail(graph, problem->message(), loc, problem->code());
    return outputs;
  }
  DType dtype = paramDType(x);
  return stackRecurrences(
      x, h0, {}, stack,
      [&](int64_t layer, bool reverse, Tensor input, const RecurrenceOptions &options) {
        std::string suffix = recurrentParamSuffix(layer, reverse);
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
