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
  int64_t steps = x.dim(1), features = x.dim(2);
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

  // The input projection of every step at once: one [B*T, F] x [F, 4U]
  // contraction instead of T small ones.
  Tensor projected = add(matmul(x, kernel, {}, loc), bias, loc); // [B, T, 4U]
  Tensor h, c;
  std::vector<Tensor> outputs;
  for (int64_t t = 0; t < steps; ++t) {
    Tensor z = squeeze(sliceAxis(projected, 1, t, t + 1, 1, loc), {1}, loc); // [B, 4U]
    // h and c start at zero, so step 0 has no recurrent term.
    if (t > 0)
      z = add(z, matmul(h, recurrent, {}, loc), loc);
    Tensor inputGate = sigmoid(sliceAxis(z, 1, 0, units, 1, loc), loc);
    Tensor forgetGate = sigmoid(sliceAxis(z, 1, units, 2 * units, 1, loc), loc);
    Tensor candidate = tanh(sliceAxis(z, 1, 2 * units, 3 * units, 1, loc), loc);
    Tensor outputGate = sigmoid(sliceAxis(z, 1, 3 * units, 4 * units, 1, loc), loc);
    Tensor update = mul(inputGate, candidate, loc);
    c = t > 0 ? add(mul(forgetGate, c, loc), update, loc) : update;
    h = mul(outputGate, tanh(c, loc), loc);
    if (config_.returnSequences)
      outputs.push_back(unsqueeze(h, {1}, loc));
  }
  return config_.returnSequences ? concat(outputs, 1, loc) : h;
}

} // namespace kiln::nn
