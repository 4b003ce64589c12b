// nn::LSTM, unrolled over its static sequence length.
#include "frontend/nn/LSTM.h"

#include "frontend/Ops.h"
#include "frontend/Recurrence.h"

#include <fmt/format.h>

namespace kiln::nn {

LSTM::LSTM(LSTMConfig config) : Layer("lstm", config.name), config_(std::move(config)) {}

LSTM::LSTM(int64_t units, bool returnSequences, std::string name)
    : LSTM(
          LSTMConfig{.units = units, .returnSequences = returnSequences, .name = std::move(name)}) {
}

Tensor LSTM::forward(Graph &graph, Tensor x, const std::source_location &loc) {
  int64_t units = config_.units;
  if (units <= 0)
    return fail(graph, fmt::format("units must be positive, got {}", units), loc);
  // The four gates are stacked along one axis of 4 * units.
  if (units > ir::kMaxElements / 4)
    return fail(graph,
                fmt::format("units = {} is too large: the four gates need 4 * units, more than "
                            "2^53",
                            units),
                loc);
  if (x.rank() != 3 || x.dim(1) == 0)
    return fail(
        graph, fmt::format("input must be [batch, time, features] with time >= 1, got {}", x.str()),
        loc, ErrorCode::ShapeMismatch);
  int64_t features = x.dim(2);
  DType dtype = paramDType(x);
  Tensor kernel = weight(graph, "weight", {features, 4 * units}, dtype, config_.kernelInitializer,
                         denseFans(features, 4 * units), loc);
  Tensor recurrent = weight(graph, "recurrent_weight", {units, 4 * units}, dtype,
                            config_.recurrentInitializer, denseFans(units, 4 * units), loc);
  bool unitForgetBias = config_.unitForgetBias;
  Initializer biasInit = [unitForgetBias, units](DType type, const Shape &shape, Fans, Rng &) {
    HostTensor bias(type, shape);
    if (unitForgetBias)
      for (int64_t i = units; i < 2 * units; ++i)
        bias.setDouble(i, 1.0);
    return bias;
  };
  Tensor bias = weight(graph, "bias", {4 * units}, dtype, biasInit, {features, 4 * units}, loc);

  RecurrenceOptions options;
  options.keepSequence = config_.returnSequences;
  RecurrenceResult result = lstmSequence(x, kernel, recurrent, bias, options, {}, loc);
  return config_.returnSequences ? result.sequence : result.lastHidden;
}

} // namespace kiln::nn
