// The LSTM and GRU recurrences, unrolled step by step.
#include "frontend/Recurrence.h"

#include "frontend/Ops.h"

#include <vector>

namespace kiln {

namespace {

// Block `index` of `width` elements along the last axis of z [B, n * width].
Tensor gate(Tensor z, int index, int64_t width, const std::source_location &loc) {
  return sliceAxis(z, 1, index * width, (index + 1) * width, 1, loc);
}

// Step t's rows of the per-step projection p [B, T, n]: [B, n].
Tensor step(Tensor projected, int64_t t, const std::source_location &loc) {
  return squeeze(sliceAxis(projected, 1, t, t + 1, 1, loc), {1}, loc);
}

// The hidden states in input time order, [B, T, U].
Tensor stack(std::vector<Tensor> &states, const std::source_location &loc) {
  std::vector<Tensor> expanded;
  for (Tensor &state : states)
    expanded.push_back(unsqueeze(state, {1}, loc));
  return concat(expanded, 1, loc);
}

} // namespace

RecurrenceResult lstmSequence(Tensor x, Tensor kernel, Tensor recurrent, Tensor bias,
                              const RecurrenceOptions &options, LstmGateOrder gates,
                              std::source_location loc) {
  int64_t steps = x.dim(1), units = recurrent.dim(0);
  // The input projection of every step at once: one [B*T, F] x [F, 4U] contraction.
  Tensor projected = matmul(x, kernel, {}, loc);
  if (!bias.empty())
    projected = add(projected, bias, loc);
  Tensor h = options.initialHidden, c = options.initialCell;
  std::vector<Tensor> states(options.keepSequence ? static_cast<size_t>(steps) : 0);
  for (int64_t i = 0; i < steps; ++i) {
    int64_t t = options.reverse ? steps - 1 - i : i;
    Tensor z = step(projected, t, loc);
    // Zero initial states contribute nothing: the first step has no recurrent term.
    if (!h.empty())
      z = add(z, matmul(h, recurrent, {}, loc), loc);
    Tensor inputGate = sigmoid(gate(z, gates.input, units, loc), loc);
    Tensor forgetGate = sigmoid(gate(z, gates.forget, units, loc), loc);
    Tensor candidate = tanh(gate(z, gates.cell, units, loc), loc);
    Tensor outputGate = sigmoid(gate(z, gates.output, units, loc), loc);
    Tensor update = mul(inputGate, candidate, loc);
    c = c.empty() ? update : add(mul(forgetGate, c, loc), update, loc);
    h = mul(outputGate, tanh(c, loc), loc);
    if (options.keepSequence)
      states[static_cast<size_t>(t)] = h;
  }
  RecurrenceResult result;
  result.lastHidden = h;
  result.lastCell = c;
  if (options.keepSequence)
    result.sequence = stack(states, loc);
  return result;
}

RecurrenceResult gruSequence(Tensor x, Tensor kernel, Tensor recurrent, Tensor inputBias,
                             Tensor recurrentBias, const RecurrenceOptions &options,
                             GruGateOrder gates, bool linearBeforeReset,
                             std::source_location loc) {
  int64_t steps = x.dim(1), units = recurrent.dim(0);
  Tensor projected = matmul(x, kernel, {}, loc);
  if (!inputBias.empty())
    projected = add(projected, inputBias, loc);
  // The candidate's recurrent block, for the form that resets h before the product.
  Tensor recurrentCandidate = sliceAxis(recurrent, 1, gates.candidate * units,
                                        (gates.candidate + 1) * units, 1, loc);
  Tensor biasCandidate = recurrentBias.empty()
                             ? Tensor()
                             : sliceAxis(recurrentBias, 0, gates.candidate * units,
                                         (gates.candidate + 1) * units, 1, loc);
  Tensor h = options.initialHidden;
  if (h.empty())
    h = constant(*x.graph(), 0.0, {x.dim(0), units}, x.dtype(), loc);
  std::vector<Tensor> states(options.keepSequence ? static_cast<size_t>(steps) : 0);
  for (int64_t i = 0; i < steps; ++i) {
    int64_t t = options.reverse ? steps - 1 - i : i;
    Tensor a = step(projected, t, loc);
    Tensor b = matmul(h, recurrent, {}, loc);
    if (!recurrentBias.empty())
      b = add(b, recurrentBias, loc);
    Tensor update = sigmoid(add(gate(a, gates.update, units, loc),
                                gate(b, gates.update, units, loc), loc), loc);
    Tensor reset = sigmoid(add(gate(a, gates.reset, units, loc),
                               gate(b, gates.reset, units, loc), loc), loc);
    Tensor hidden;
    if (linearBeforeReset) {
      hidden = mul(reset, gate(b, gates.candidate, units, loc), loc);
    } else {
      hidden = matmul(mul(reset, h, loc), recurrentCandidate, {}, loc);
      if (!biasCandidate.empty())
        hidden = add(hidden, biasCandidate, loc);
    }
    Tensor candidate = tanh(add(gate(a, gates.candidate, units, loc), hidden, loc), loc);
    // h = (1 - z) * n + z * h = n + z * (h - n)
    h = add(candidate, mul(update, sub(h, candidate, loc), loc), loc);
    if (options.keepSequence)
      states[static_cast<size_t>(t)] = h;
  }
  RecurrenceResult result;
  result.lastHidden = h;
  if (options.keepSequence)
    result.sequence = stack(states, loc);
  return result;
}

} // namespace kiln
