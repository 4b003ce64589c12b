// Layers and directions of recurrences.
#include "frontend/nn/RecurrentStack.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

#include <vector>

namespace kiln::nn {

namespace {

Tensor stateOf(Tensor states, int64_t index, const std::source_location &loc) {
  if (states.empty())
    return {};
  return squeeze(sliceAxis(states, 0, index, index + 1, 1, loc), {0}, loc);
}

Tensor stackStates(const std::vector<Tensor> &states, const std::source_location &loc) {
  std::vector<Tensor> expanded;
  for (const Tensor &state : states)
    expanded.push_back(unsqueeze(state, {0}, loc));
  return concat(expanded, 0, loc);
}

} // namespace

std::optional<Error> checkRecurrentInputs(
    Tensor x, std::initializer_list<std::pair<Tensor, const char *>> states, int64_t gates,
    int64_t units, const RecurrentStackShape &shape) {
  if (units <= 0 || units > ir::kMaxElements / gates)
    return Error(ErrorCode::InvalidArgument,
                 fmt::format("units must be in [1, 2^53 / {}] (the {} gates are stacked along one "
                             "axis), got {}",
                             gates, gates, units));
  if (shape.layers < 1)
    return Error(ErrorCode::InvalidArgument,
                 fmt::format("layers must be at least 1, got {}", shape.layers));
  if (x.rank() != 3 || x.dim(1) == 0)
    return Error(ErrorCode::ShapeMismatch,
                 fmt::format("input must be [batch, time, features] with time >= 1, got {}",
                             x.str()));
  Shape stateShape{shape.layers * (shape.bidirectional ? 2 : 1), x.dim(0), units};
  for (const auto &[state, name] : states)
    if (!state.empty() && (state.graph() != x.graph() || state.shape() != stateShape))
      return Error(ErrorCode::ShapeMismatch,
                   fmt::format("{} must be a {} tensor of this graph, got {}", name,
                               ir::TensorType{x.dtype(), stateShape}.str(), state.str()));
  return std::nullopt;
}

std::string recurrentParamSuffix(int64_t layer, bool reverse) {
  return (layer > 0 ? fmt::format("_l{}", layer) : std::string()) + (reverse ? "_reverse" : "");
}

RecurrentOutputs stackRecurrences(
    Tensor x, Tensor h0, Tensor c0, const RecurrentStackShape &shape,
    const std::function<RecurrenceResult(int64_t, bool, Tensor, const RecurrenceOptions &)>
        &recurrence,
    const std::source_location &loc) {
  int64_t directions = shape.bidirectional ? 2 : 1;
  Tensor input = x;
  std::vector<Tensor> hidden, cells, lastOutputs;
  for (int64_t layer = 0; layer < shape.layers; ++layer) {
    bool lastLayer = layer + 1 == shape.layers;
    std::vector<Tensor> sequences;
    lastOutputs.clear();
    for (int64_t direction = 0; direction < directions; ++direction) {
      RecurrenceOptions options;
      options.initialHidden = stateOf(h0, layer * directions + direction, loc);
      options.initialCell = stateOf(c0, layer * directions + direction, loc);
      options.reverse = direction == 1;
      // The last layer builds its sequence only when it is the output.
      options.keepSequence = !lastLayer || shape.returnSequences;
      RecurrenceResult result = recurrence(layer, options.reverse, input, options);
      sequences.push_back(result.sequence);
      hidden.push_back(result.lastHidden);
      if (!result.lastCell.empty())
        cells.push_back(result.lastCell);
      lastOutputs.push_back(result.lastHidden);
    }
    if (!lastLayer || shape.returnSequences)
      input = directions == 1 ? sequences[0] : concat(sequences, 2, loc);
  }
  RecurrentOutputs outputs;
  if (shape.returnSequences)
    outputs.output = input;
  else
    outputs.output = directions == 1 ? lastOutputs[0] : concat(lastOutputs, 1, loc);
  if (shape.wantStates) {
    outputs.hidden = stackStates(hidden, loc);
    if (!cells.empty())
      outputs.cell = stackStates(cells, loc);
  }
  return outputs;
}

} // namespace kiln::nn
