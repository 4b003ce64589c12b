// nn::LSTM, unrolled over its static sequence length.
#include "frontend/nn/LSTM.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln::nn {

LSTM::LSTM(LSTMConfig config) : Layer("lstm", config.name), config_(std::move(config)) {}

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
  auto failed = [&](const std::string &message, ErrorCode code = ErrorCode::InvalidArgument) {
    RecurrentOutputs outputs;
    outputs.output = fail(graph, message, loc, code);
    return outputs;
  };
  if (units <= 0)
    return failed(fmt::format("units must be positive, got {}", units));
  // The four gates are stacked along one axis of 4 * units.
  if (units > ir::kMaxElements / 4)
    return failed(fmt::format("units = {} is too large: the four gates need 4 * units, more "
                              "than 2^53",
                              units));
  if (config_.layers < 1)
    return failed(fmt::format("layers must be at least 1, got {}", config_.layers));
  if (x.rank() != 3 || x.dim(1) == 0)
    return failed(
        fmt::format("input must be [batch, time, features] with time >= 1, got {}", x.str()),
        ErrorCode::ShapeMismatch);
  int64_t directions = config_.bidirectional ? 2 : 1;
  Shape stateShape{config_.layers * directions, x.dim(0), units};
  for (const auto &[state, name] : {std::pair{h0, "h0"}, std::pair{c0, "c0"}})
    if (!state.empty() && (state.graph() != &graph || state.shape() != stateShape))
      return failed(fmt::format("{} must be a {} tensor of this graph, got {}", name,
                                ir::TensorType{x.dtype(), stateShape}.str(), state.str()),
                    ErrorCode::ShapeMismatch);
  DType dtype = paramDType(x);
  bool unitForgetBias = config_.unitForgetBias;
  Initializer biasInit = [unitForgetBias, units](DType type, const Shape &shape, Fans, Rng &) {
    HostTensor bias(type, shape);
    if (unitForgetBias)
      for (int64_t i = units; i < 2 * units; ++i)
        bias.setDouble(i, 1.0);
    return bias;
  };
  RecurrentStackShape shape{.layers = config_.layers,
                            .bidirectional = config_.bidirectional,
                            .returnSequences = config_.returnSequences,
                            .wantStates = wantStates};
  return stackRecurrences(
      x, h0, c0, shape,
      [&](int64_t layer, bool reverse, Tensor input, const RecurrenceOptions &options) {
        std::string suffix =
            (layer > 0 ? fmt::format("_l{}", layer) : std::string()) + (reverse ? "_reverse" : "");
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
