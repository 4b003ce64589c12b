// nn::LSTM, unrolled over its static sequence length.
#include "frontend/nn/LSTM.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln::nn {

LSTM::LSTM(LSTMConfig config) : ConfiguredLayer("lstm", std::move(config)) {}

LSTM::LSTM(int64_t units, bool returnSequences, std::string name)
    : LSTM(
          LSTMConfig{.units = units, .returnSequences = returnSequences, .name = std::move(name)}) {
}

Tensor LSTM::forward(Graph &graph, Tensor x, const std::source_location &loc) {
  return run(graph, x, {}, {}, /*wantStates=*/false, loc).output;
}

RecurrentOutputs LSTM::withState(Graph &graph, Tensor x, Tensor h0, Tensor c0,
                                 std::source_location loc) {
  RecurrentOutputs outputs;
  outputs.output = call(graph, {x}, loc, [&] {
    outputs = run(graph, x, h0, c0, /*wantStates=*/true, loc);
    return outputs.output;
  });
  return outputs;
}

RecurrentOutputs LSTM::run(Graph &graph, Tensor x, Tensor h0, Tensor c0, bool wantStates,
                           const std::source_location &loc) {
  int64_t units = config_.units;
  RecurrentStackShape stack{.layers = config_.layers,
                            .bidirectional = config_.bidirectional,
                            .returnSequences = config_.returnSequences,
                            .wantStates = wantStates};
  if (auto problem = checkRecurrentInputs(x, {{h0, "h0"}, {c0, "c0"}}, 4, units, stack)) {
    RecurrentOutputs outputs;
    outputs.output = fail(graph, problem->message(), loc, problem->code());
    return outputs;
  }
  DType dtype = paramDType(x);
  bool unitForgetBias = config_.unitForgetBias;
  Initializer biasInit = [unitForgetBias, units](DType type, const Shape &shape, Fans, Rng &) {
    HostTensor bias(type, shape);
    if (unitForgetBias)
      for (int64_t i = units; i < 2 * units; ++i)
        bias.setDouble(i, 1.0);
    return bias;
  };
  return stackRecurrences(
      x, h0, c0, stack,
      [&](int64_t layer, bool reverse, Tensor input, const RecurrenceOptions &options) {
        std::string suffix = recurrentParamSuffix(layer, reverse);
        int64_t features = input.dim(2);
        Tensor kernel = weight(graph, "weight" + suffix, {features, 4 * units}, dtype,
                               config_.kernelInitializer, denseFans(features, 4 * units), loc);
        Tensor recurrent =
            weight(graph, "recurrent_weight" + suffix, {units, 4 * units}, dtype,
                   config_.recurrentInitializer, denseFans(units, 4 * units), loc);
        Tensor bias = weight(graph, "bias" + suffix, {4 * units}, dtype, biasInit,
                             {features, 4 * units}, loc);
        return lstmSequence(input, kernel, recurrent, bias, options, {}, loc);
      },
      loc);
}

} // namespace kiln::nn
