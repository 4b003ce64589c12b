// Graph construction, use-list maintenance, rewriting helpers and the stable
// topological order.
#include "ir/graph/Graph.h"

#include "ir/graph/Identifier.h"

#include <algorithm>
#include <fmt/format.h>
#include <queue>
#include <unordered_map>

namespace kiln::ir {

namespace {

std::string operandTypesStr(std::span<const TensorType> types) {
  std::string out;
  for (const TensorType &type : types)
    out += (out.empty() ? "" : ", ") + type.str();
  return "(" + out + ")";
}

} // namespace

void Value::eraseUse(const Use &use) {
  auto it = std::find(uses_.begin(), uses_.end(), use);
  KILN_CHECK(it != uses_.end(), "use list out of sync");
  uses_.erase(it);
}

Node::Node(OpKind kind, std::vector<Value *> operands, AttrMap attrs, TensorType type,
           Location location, uint64_t id)
    : kind_(kind), operands_(std::move(operands)), attrs_(std::move(attrs)),
      result_(Value::Kind::Result, std::move(type), "", this), location_(std::move(location)),
      id_(id) {
  for (size_t i = 0; i < operands_.size(); ++i)
    operands_[i]->uses_.push_back(Use{this, static_cast<unsigned>(i)});
}

void Node::setOperand(size_t index, Value *value) {
  KILN_CHECK(index < operands_.size(), "operand index out of range");
  operands_[index]->eraseUse(Use{this, static_cast<unsigned>(index)});
  operands_[index] = value;
  value->uses_.push_back(Use{this, static_cast<unsigned>(index)});
}

Graph::Graph(std::string name) : name_(std::move(name)) {}
Graph::~Graph() = default;

Value *Graph::addLeaf(Value::Kind kind, std::string name, TensorType type) {
  leaves_.push_back(std::unique_ptr<Value>(new Value(kind, std::move(type), std::move(name),
                                                     nullptr)));
  return leaves_.back().get();
}

const SizeSymbol *Graph::findSymbol(std::string_view name) const {
  for (const SizeSymbol &symbol : symbols_)
    if (symbol.name == name)
      return &symbol;
  return nullptr;
}

Expected<void> Graph::declareSymbol(SizeSymbol symbol) {
  if (!isIdentifier(symbol.name))
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("size symbol name '{}' is not an identifier", symbol.name));
  if (symbol.min < 0 || symbol.min > symbol.max || symbol.max > kMaxElements)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("size symbol {} has a bad range [{}, {}]: need 0 <= min <= max "
                                 "<= 2^53",
                                 symbol.name, symbol.min, symbol.max));
  if (const SizeSymbol *existing = findSymbol(symbol.name))
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("size symbol {} is declared twice: {} and {}", symbol.name,
                                 existing->str(), symbol.str()));
  symbols_.push_back(std::move(symbol));
  return {};
}

/// Every symbol `type` mentions is declared on `graph` with the same range.
static Expected<void> checkSymbolsDeclared(const Graph &graph, std::string_view what,
                                           const TensorType &type) {
  for (const SizeExpr &size : type.symbolicDims)
    for (const SizeSymbol &symbol : size.symbols()) {
      const SizeSymbol *declared = graph.findSymbol(symbol.name);
      if (!declared)
        return makeError(ErrorCode::InvalidArgument,
                         fmt::format("{} {} uses the size symbol {}, which graph @{} does not "
                                     "declare",
                                     what, type.str(), symbol.name, graph.name()));
      if (*declared != symbol)
        return makeError(ErrorCode::InvalidArgument,
                         fmt::format("{} {} uses {}, but graph @{} declares {}", what, type.str(),
                                     symbol.str(), graph.name(), declared->str()));
    }
  return {};
}

static Expected<void> checkLeaf(const Graph &graph, std::string_view what, std::string_view name,
                                const TensorType &type) {
  KILN_TRY_VOID(checkSymbolsDeclared(graph, fmt::format("{} '{}'", what, name), type));
  if (!isIdentifier(name))
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{} name '{}' is not an identifier ([A-Za-z_][A-Za-z0-9_.]*)",
                                 what, name));
  if (graph.findInput(name) || graph.findParam(name))
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{} name '{}' is already used by an input or parameter", what,
                                 name));
  for (int64_t size : type.shape)
    if (size < 0)
      return makeError(ErrorCode::ShapeMismatch,
                       fmt::format("{} '{}' has a negative dimension: {}", what, name, type.str()));
  if (!checkedNumElements(type.shape))
    return makeError(ErrorCode::ShapeMismatch,
                     fmt::format("{} '{}' has more than 2^53 elements (zero-size dims aside): {}", what, name, type.str()));
  return {};
}

Expected<Value *> Graph::addInput(std::string name, TensorType type) {
  KILN_TRY_VOID(checkLeaf(*this, "input", name, type));
  Value *value = addLeaf(Value::Kind::Input, std::move(name), std::move(type));
  inputs_.push_back(value);
  leafByName_.emplace(value->name(), value);
  return value;
}

Expected<Value *> Graph::addParam(std::string name, TensorType type) {
  KILN_TRY_VOID(checkLeaf(*this, "parameter", name, type));
  Value *value = addLeaf(Value::Kind::Param, std::move(name), std::move(type));
  params_.push_back(value);
  leafByName_.emplace(value->name(), value);
  return value;
}

Expected<Value *> Graph::addNode(OpKind kind, std::vector<Value *> operands, AttrMap attrs,
                                 Location location) {
  std::vector<TensorType> operandTypes;
  operandTypes.reserve(operands.size());
  for (Value *operand : operands) {
    KILN_CHECK(operand != nullptr, "null operand");
    operandTypes.push_back(operand->type());
  }
  auto type = inferResultType(kind, operandTypes, attrs);
  if (!type) {
    Error error = std::move(type).error();
    if (!error.location() && location.known())
      error.at(location);
    if (!operandTypes.empty())
      error.withNote(fmt::format("{} operand types: {}", opName(kind),
                                 operandTypesStr(operandTypes)));
    return std::unexpected(std::move(error));
  }
  KILN_TRY_VOID(checkSymbolsDeclared(*this, fmt::format("the result of {}", opName(kind)), *type));
  // Sizes in attributes (reshape's target, symbol_size's size) name declared symbols too.
  for (const auto &[name, attr] : attrs)
    if (const auto *sizes = std::get_if<std::vector<SizeExpr>>(&attr))
      KILN_TRY_VOID(checkSymbolsDeclared(*this,
                                         fmt::format("{}'s attribute '{}'", opName(kind), name),
                                         TensorType{DType::I64, Shape(sizes->size(), 0), *sizes}));

  uint64_t id = nextId_++;
  auto node = std::unique_ptr<Node>(
      new Node(kind, std::move(operands), std::move(attrs), std::move(*type), std::move(location), id));
  Value *result = node->result();
  nodes_.emplace(id, std::move(node));
  return result;
}

Expected<void> Graph::addOutput(std::string name, Value *value) {
  KILN_CHECK(value != nullptr, "null output value");
  if (name.empty())
    return makeError(ErrorCode::InvalidArgument, "output name is empty");
  if (!outputNames_.insert(name).second)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("output name '{}' is already used", name));
  ++outputCount_[value];
  outputs_.push_back(GraphOutput{std::move(name), value});
  return {};
}

Value *Graph::findInput(std::string_view name) const {
  auto found = leafByName_.find(std::string(name));
  return found != leafByName_.end() && found->second->kind() == Value::Kind::Input
             ? found->second
             : nullptr;
}

Value *Graph::findParam(std::string_view name) const {
  auto found = leafByName_.find(std::string(name));
  return found != leafByName_.end() && found->second->kind() == Value::Kind::Param
             ? found->second
             : nullptr;
}

std::vector<Node *> Graph::nodes() const {
  std::vector<Node *> out;
  out.reserve(nodes_.size());
  for (const auto &[id, node] : nodes_)
    out.push_back(node.get());
  return out;
}

std::vector<Node *> Graph::topologicalOrder() const {
  // Kahn's algorithm with a min-heap on node id: deterministic, and equal to
  // creation order whenever creation order is already topological.
  std::unordered_map<const Node *, size_t> pending;
  using Entry = std::pair<uint64_t, Node *>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (const auto &[id, node] : nodes_) {
    size_t count = 0;
    for (Value *operand : node->operands())
      if (operand->definingNode())
        ++count;
    pending[node.get()] = count;
    if (count == 0)
      ready.emplace(id, node.get());
  }
  std::vector<Node *> order;
  order.reserve(nodes_.size());
  while (!ready.empty()) {
    Node *node = ready.top().second;
    ready.pop();
    order.push_back(node);
    for (const Use &use : node->result()->uses())
      if (--pending[use.user] == 0)
        ready.emplace(use.user->id(), use.user);
  }
  // A cycle leaves nodes out; the verifier reports it by comparing sizes.
  return order;
}

void Graph::replaceAllUsesWith(Value *from, Value *to) {
  KILN_CHECK(from != to, "replacing a value with itself");
  std::vector<Use> uses = from->uses();
  for (const Use &use : uses)
    use.user->setOperand(use.operandIndex, to);
  auto named = outputCount_.find(from);
  if (named == outputCount_.end())
    return;
  outputCount_[to] += named->second;
  outputCount_.erase(from);
  for (GraphOutput &output : outputs_)
    if (output.value == from)
      output.value = to;
}

bool Graph::isOutput(const Value *value) const { return outputCount_.contains(value); }

void Graph::eraseNode(Node *node) {
  KILN_CHECK(!node->result()->hasUses(), "erasing a node whose result is still used");
  KILN_CHECK(!isOutput(node->result()), "erasing a node whose result is a graph output");
  for (size_t i = 0; i < node->operands_.size(); ++i)
    node->operands_[i]->eraseUse(Use{node, static_cast<unsigned>(i)});
  size_t erased = nodes_.erase(node->id());
  KILN_CHECK(erased == 1, "erasing a node that is not in this graph");
}

void Graph::eraseParam(Value *param) {
  KILN_CHECK(param->kind() == Value::Kind::Param, "eraseParam on a non-parameter");
  KILN_CHECK(!param->hasUses() && !isOutput(param), "erasing a parameter that is still used");
  params_.erase(std::find(params_.begin(), params_.end(), param));
  leafByName_.erase(param->name());
  leaves_.erase(std::find_if(leaves_.begin(), leaves_.end(),
                             [&](const auto &leaf) { return leaf.get() == param; }));
}

} // namespace kiln::ir
