// Mapping PyTorch parameter names and layouts onto kiln's.
#include "frontend/io/TorchStateDict.h"

#include "frontend/Graph.h"
#include "ir/graph/Attribute.h"
#include "ir/graph/Graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <regex>

namespace kiln::io {

namespace {

HostTensor transposed(const HostTensor &matrix) {
  int64_t rows = matrix.shape()[0], columns = matrix.shape()[1];
  HostTensor result(matrix.dtype(), {columns, rows});
  size_t width = static_cast<size_t>(dtypeByteSize(matrix.dtype()));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c)
      std::memcpy(result.bytes().data() + (c * rows + r) * width,
                  matrix.bytes().data() + (r * columns + c) * width, width);
  return result;
}

// Rows [begin, end) of a matrix or a vector.
HostTensor rows(const HostTensor &tensor, int64_t begin, int64_t end) {
  std::vector<int64_t> shape = tensor.shape();
  int64_t rowBytes = static_cast<int64_t>(tensor.byteSize()) / std::max<int64_t>(shape[0], 1);
  shape[0] = end - begin;
  HostTensor result(tensor.dtype(), shape);
  std::memcpy(result.bytes().data(), tensor.bytes().data() + begin * rowBytes,
              static_cast<size_t>((end - begin) * rowBytes));
  return result;
}

class StateDictMapper {
public:
  explicit StateDictMapper(const Graph &graph) : graph_(graph) {}

  void place(const std::string &name, const HostTensor &tensor);
  Expected<NamedTensors> finish();

private:
  const HostTensor *param(const std::string &name) const {
    auto it = graph_.paramValues().find(name);
    return it == graph_.paramValues().end() ? nullptr : &it->second;
  }
  // Sets kiln parameter `target` from `value` (cast to the parameter's dtype), or records
  // why not; `add` accumulates (LSTM's two biases are one parameter in kiln).
  void assign(const std::string &source, const std::string &target, HostTensor value,
              bool add = false);
  bool isMatMulKernel(const std::string &name) const;
  void unplaced(const std::string &name, std::string why) {
    problems_.push_back(fmt::format("'{}': {}", name, why));
  }

  const Graph &graph_;
  NamedTensors values_;
  std::vector<std::string> problems_;
};

void StateDictMapper::assign(const std::string &source, const std::string &target,
                             HostTensor value, bool add) {
  const HostTensor *current = param(target);
  if (!current)
    return unplaced(source, fmt::format("the graph has no parameter '{}'", target));
  if (value.shape() != current->shape())
    return unplaced(source, fmt::format("{} does not fit parameter '{}' ({})", value.typeStr(),
                                        target, current->typeStr()));
  if (value.dtype() != current->dtype())
    value = value.castTo(current->dtype());
  auto [it, inserted] = values_.try_emplace(target, value);
  if (!inserted && add) {
    for (int64_t i = 0; i < value.numElements(); ++i)
      it->second.setDouble(i, it->second.getDouble(i) + value.getDouble(i));
  } else if (!inserted) {
    unplaced(source, fmt::format("parameter '{}' already has a value", target));
  }
}

void StateDictMapper::place(const std::string &name, const HostTensor &tensor) {
  size_t dot = name.rfind('.');
  std::string prefix = dot == std::string::npos ? "" : name.substr(0, dot + 1);
  std::string leaf = dot == std::string::npos ? name : name.substr(dot + 1);
  if (leaf == "num_batches_tracked")
    return;

  // nn.LSTM / nn.GRU: weight_ih_l1_reverse -> weight_l1_reverse (transposed), ...
  static const std::regex recurrent("(weight|bias)_(ih|hh)_l([0-9]+)(_reverse)?");
  std::smatch match;
  if (std::regex_match(leaf, match, recurrent)) {
    std::string suffix = (match[3] == "0" ? std::string() : "_l" + match[3].str()) +
                         match[4].str();
    bool isWeight = match[1] == "weight", isInput = match[2] == "ih";
    if (isWeight && tensor.rank() == 2)
      return assign(name, prefix + (isInput ? "weight" : "recurrent_weight") + suffix,
                    transposed(tensor));
    // A GRU keeps both biases; an LSTM adds them into one.
    bool separateBiases = param(prefix + "recurrent_bias" + suffix) != nullptr;
    if (!isWeight && separateBiases)
      return assign(name, prefix + (isInput ? "bias" : "recurrent_bias") + suffix, tensor);
    if (!isWeight)
      return assign(name, prefix + "bias" + suffix, tensor, /*add=*/true);
    return unplaced(name, fmt::format("a recurrent weight must be rank 2, got {}",
                                      tensor.typeStr()));
  }

  // nn.MultiheadAttention: in_proj rows are q, k, v; out_proj is the output Dense.
  if (leaf == "in_proj_weight" || leaf == "in_proj_bias") {
    int64_t width = tensor.rank() > 0 ? tensor.shape()[0] / 3 : 0;
    if (tensor.rank() < 1 || width * 3 != tensor.shape()[0])
      return unplaced(name, fmt::format("{} does not split into q, k and v", tensor.typeStr()));
    const char *parts[] = {"query", "key", "value"};
    for (int64_t part = 0; part < 3; ++part) {
      HostTensor block = rows(tensor, part * width, (part + 1) * width);
      if (leaf == "in_proj_weight")
        assign(name, prefix + parts[part] + ".weight", transposed(block));
      else
        assign(name, prefix + parts[part] + ".bias", block);
    }
    return;
  }
  static const std::regex separate("(q|k|v)_proj_weight");
  if (std::regex_match(leaf, match, separate)) {
    std::string part = match[1] == "q" ? "query" : match[1] == "k" ? "key" : "value";
    return assign(name, prefix + part + ".weight", transposed(tensor));
  }
  std::string target = name;
  if (prefix.ends_with("out_proj.") && param(prefix.substr(0, prefix.size() - 9) + "output." + leaf))
    target = prefix.substr(0, prefix.size() - 9) + "output." + leaf;

  const HostTensor *current = param(target);
  if (!current)
    return unplaced(name, "the graph has no parameter of that name");
  // Linear's weight is [out, in]; kiln's Dense keeps [in, out]. Which a matrix is shows in the
  // graph, not in the shape (a square one fits both ways): the right operand of a matmul is a
  // Dense kernel, anything else (an Embedding's table) keeps its layout.
  if (tensor.rank() == 2 && isMatMulKernel(target))
    return assign(name, target, transposed(tensor));
  assign(name, target, tensor);
}

bool StateDictMapper::isMatMulKernel(const std::string &name) const {
  const ir::Value *value = graph_.ir().findParam(name);
  if (!value)
    return false;
  for (const ir::Use &use : value->uses())
    if (use.user->kind() == ir::OpKind::MatMul && use.operandIndex == 1 &&
        !ir::getBool(use.user->attrs(), "transpose_b"))
      return true;
  return false;
}

Expected<NamedTensors> StateDictMapper::finish() {
  std::vector<std::string> missing;
  for (const auto &[name, value] : graph_.paramValues())
    if (!values_.contains(name))
      missing.push_back(name);
  if (problems_.empty() && missing.empty())
    return values_;
  Error error(ErrorCode::InvalidArgument,
              fmt::format("the state dict does not fit graph '{}': {} tensor{} not placed, {} "
                          "parameter{} without a value",
                          graph_.name(), problems_.size(), problems_.size() == 1 ? "" : "s",
                          missing.size(), missing.size() == 1 ? "" : "s"));
  for (auto &problem : problems_)
    error.withNote("not placed: " + problem);
  for (auto &name : missing)
    error.withNote(fmt::format("no value for parameter '{}'", name));
  return std::unexpected(std::move(error));
}

} // namespace

Expected<NamedTensors> mapTorchStateDict(const Graph &graph, const TensorMap &stateDict) {
  StateDictMapper mapper(graph);
  for (const auto &[name, tensor] : stateDict)
    mapper.place(name, tensor);
  return mapper.finish();
}

} // namespace kiln::io
