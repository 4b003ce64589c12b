// Converters of ONNX's LSTM and GRU: each direction is one lstmSequence / gruSequence
// (frontend/Recurrence.h), the recurrence the nn layers build too.
#include "frontend/Recurrence.h"
#include "frontend/onnx/converters/Converters.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::onnx {

namespace {

// The attributes and inputs LSTM and GRU share.
struct RecurrentNode {
  int64_t hiddenSize = 0;
  int64_t directions = 1;
  bool reverse = false;    ///< direction = "reverse"
  bool batchMajor = false; ///< layout = 1
  Tensor x;                ///< [B, T, F]
};

Expected<RecurrentNode> readRecurrentNode(OnnxNode &node,
                                         const std::vector<std::string> &activations) {
  RecurrentNode recurrent;
  recurrent.hiddenSize = node.intAttr("hidden_size", 0);
  std::string direction = node.stringAttr("direction", "forward");
  if (direction == "bidirectional")
    recurrent.directions = 2;
  else if (direction == "reverse")
    recurrent.reverse = true;
  else if (direction != "forward")
    node.reject(fmt::format("attribute direction = '{}'", direction));
  recurrent.batchMajor = node.intAttr("layout", 0) != 0;
  // kiln's recurrences use ONNX's default activations, which exporters may also spell out.
  std::vector<std::string> expected;
  for (int64_t d = 0; d < recurrent.directions; ++d)
    expected.insert(expected.end(), activations.begin(), activations.end());
  if (std::vector<std::string> given = node.stringsAttr("activations", expected);
      given != expected)
    node.reject(fmt::format("attribute activations = [{}]", fmt::join(given, ",")));
  if (node.hasAttr("clip"))
    node.reject("attribute clip");
  if (node.hasAttr("activation_alpha") || node.hasAttr("activation_beta"))
    node.reject("attributes activation_alpha / activation_beta");
  if (node.hasInput(4)) {
    // Equal sequence lengths are the whole sequence; others would need masking.
    const HostTensor *lengths = node.knownValue(4);
    if (!lengths)
      node.reject("input sequence_lens computed at run time");
  }
  if (node.rejectedAny())
    return node.rejection();
  KILN_TRY(Tensor x, node.input(0));
  if (x.rank() != 3)
    return node.fail(ErrorCode::ShapeMismatch, fmt::format("input X {} is not rank 3", x.str()));
  recurrent.x = recurrent.batchMajor ? x : transpose(x, {1, 0, 2});
  if (const HostTensor *lengths = node.knownValue(4)) {
    KILN_TRY(int64_t steps, node.staticDim(recurrent.x, 1));
    for (double length : lengths->toDoubles())
      if (length != static_cast<double>(steps)) {
        node.reject(fmt::format("sequence_lens other than the sequence length {}", steps));
        return node.rejection();
      }
  }
  return recurrent;
}

// Direction d's block of a [D, ...] input, as [...].
Tensor direction(Tensor packed, int64_t d) { return squeeze(sliceAxis(packed, 0, d, d + 1), {0}); }

// Optional [D, B, H] initial state input `index` for direction d, or empty.
Expected<Tensor> initialState(OnnxNode &node, size_t index, int64_t d) {
  if (!node.hasInput(index))
    return Tensor();
  KILN_TRY(Tensor state, node.input(index));
  return direction(state, d);
}

// Y ([T, D, B, H], or [B, T, D, H] with layout 1) and the [D, B, H] (or [B, D, H]) last states.
void setRecurrentOutputs(OnnxNode &node, const RecurrentNode &recurrent,
                         std::vector<RecurrenceResult> &results) {
  std::vector<Tensor> sequences, hidden, cells;
  for (RecurrenceResult &result : results) {
    sequences.push_back(unsqueeze(result.sequence, {2})); // [B, T, 1, H]
    hidden.push_back(unsqueeze(result.lastHidden, {1}));  // [B, 1, H]
    if (!result.lastCell.empty())
      cells.push_back(unsqueeze(result.lastCell, {1}));
  }
  Tensor y = concat(sequences, 2); // [B, T, D, H]
  Tensor lastHidden = concat(hidden, 1);  // [B, D, H]
  if (node.hasOutput(0))
    node.setOutput(0, recurrent.batchMajor ? y : transpose(y, {1, 2, 0, 3}));
  if (node.hasOutput(1))
    node.setOutput(1, recurrent.batchMajor ? lastHidden : transpose(lastHidden, {1, 0, 2}));
  if (node.hasOutput(2) && !cells.empty()) {
    Tensor lastCell = concat(cells, 1);
    node.setOutput(2, recurrent.batchMajor ? lastCell : transpose(lastCell, {1, 0, 2}));
  }
}

} // namespace

// W [D, 4H, F], R [D, 4H, H], B [D, 8H] (input then recurrent biases), gates i, o, f, c.
Expected<void> convertLSTM(OnnxNode &node) {
  if (node.intAttr("input_forget", 0) != 0)
    node.reject("attribute input_forget = 1");
  if (node.hasInput(7))
    node.reject("input P (peepholes)");
  KILN_TRY(RecurrentNode recurrent, readRecurrentNode(node, {"Sigmoid", "Tanh", "Tanh"}));
  KILN_TRY(Tensor weights, node.input(1));
  KILN_TRY(Tensor recurrentWeights, node.input(2));
  int64_t hidden = recurrent.hiddenSize;
  std::vector<RecurrenceResult> results;
  for (int64_t d = 0; d < recurrent.directions; ++d) {
    Tensor kernel = transpose(direction(weights, d), {1, 0});
    Tensor recurrentKernel = transpose(direction(recurrentWeights, d), {1, 0});
    Tensor bias;
    if (node.hasInput(3)) {
      KILN_TRY(Tensor packed, node.input(3));
      Tensor both = direction(packed, d);
      bias = add(sliceAxis(both, 0, 0, 4 * hidden), sliceAxis(both, 0, 4 * hidden, 8 * hidden));
    }
    RecurrenceOptions options;
    KILN_TRY(options.initialHidden, initialState(node, 5, d));
    KILN_TRY(options.initialCell, initialState(node, 6, d));
    options.reverse = recurrent.reverse || d == 1;
    results.push_back(lstmSequence(recurrent.x, kernel, recurrentKernel, bias, options,
                                   kOnnxLstmGates));
  }
  setRecurrentOutputs(node, recurrent, results);
  return {};
}

// W [D, 3H, F], R [D, 3H, H], B [D, 6H], gates z, r, h.
Expected<void> convertGRU(OnnxNode &node) {
  KILN_TRY(RecurrentNode recurrent, readRecurrentNode(node, {"Sigmoid", "Tanh"}));
  KILN_TRY(Tensor weights, node.input(1));
  KILN_TRY(Tensor recurrentWeights, node.input(2));
  int64_t hidden = recurrent.hiddenSize;
  bool linearBeforeReset = node.intAttr("linear_before_reset", 0) != 0;
  std::vector<RecurrenceResult> results;
  for (int64_t d = 0; d < recurrent.directions; ++d) {
    Tensor kernel = transpose(direction(weights, d), {1, 0});
    Tensor recurrentKernel = transpose(direction(recurrentWeights, d), {1, 0});
    Tensor inputBias, recurrentBias;
    if (node.hasInput(3)) {
      KILN_TRY(Tensor packed, node.input(3));
      Tensor both = direction(packed, d);
      inputBias = sliceAxis(both, 0, 0, 3 * hidden);
      recurrentBias = sliceAxis(both, 0, 3 * hidden, 6 * hidden);
    }
    RecurrenceOptions options;
    KILN_TRY(options.initialHidden, initialState(node, 5, d));
    options.reverse = recurrent.reverse || d == 1;
    results.push_back(gruSequence(recurrent.x, kernel, recurrentKernel, inputBias, recurrentBias,
                                  options, {}, linearBeforeReset));
  }
  setRecurrentOutputs(node, recurrent, results);
  return {};
}

} // namespace kiln::onnx
