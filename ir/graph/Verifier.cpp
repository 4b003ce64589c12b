// The graph verifier: every invariant a pass may rely on, checked in one place.
#include "ir/graph/Verifier.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>
#include <unordered_set>

namespace kiln::ir {

namespace {

std::unexpected<Error> verifyError(const Node *node, std::string message) {
  std::optional<Location> location;
  if (node && node->location().known())
    location = node->location();
  if (node)
    message = fmt::format("{} (node #{}): {}", node->name(), node->id(), message);
  return makeError(ErrorCode::VerifyError, std::move(message), location);
}

// Attribute equality where a NaN equals itself (operator== on the variant
// says NaN != NaN, which would reject every folded NaN constant).
bool sameAttrs(const AttrMap &a, const AttrMap &b) {
  auto sameDouble = [](double x, double y) { return x == y || (x != x && y != y); };
  auto sameAttr = [&](const Attr &x, const Attr &y) {
    if (x.index() != y.index())
      return false;
    if (const auto *d = std::get_if<double>(&x))
      return sameDouble(*d, std::get<double>(y));
    if (const auto *ds = std::get_if<std::vector<double>>(&x)) {
      const auto &es = std::get<std::vector<double>>(y);
      return ds->size() == es.size() && std::equal(ds->begin(), ds->end(), es.begin(), sameDouble);
    }
    return x == y;
  };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&](const auto &x,
                                                                               const auto &y) {
           return x.first == y.first && sameAttr(x.second, y.second);
         });
}

Expected<void> verifyNode(const Node &node, const std::unordered_set<const Value *> &live) {
  for (size_t i = 0; i < node.numOperands(); ++i) {
    const Value *operand = node.operand(i);
    if (!live.contains(operand))
      return verifyError(&node, fmt::format("operand {} is not a live value of this graph", i));
    size_t matching = 0;
    for (const Use &use : operand->uses())
      if (use.user == &node && use.operandIndex == i)
        ++matching;
    if (matching != 1)
      return verifyError(&node, fmt::format("operand {} has {} matching uses, expected 1", i,
                                            matching));
  }
  for (const Use &use : node.result()->uses())
    if (use.operandIndex >= use.user->numOperands() ||
        use.user->operand(use.operandIndex) != node.result())
      return verifyError(&node, "its result's use list names an operand that is not it");

  std::vector<TensorType> operandTypes;
  for (const Value *operand : node.operands())
    operandTypes.push_back(operand->type());
  AttrMap attrs = node.attrs();
  auto inferred = inferResultType(node.kind(), operandTypes, attrs);
  if (!inferred)
    return verifyError(&node, inferred.error().message());
  if (!sameAttrs(attrs, node.attrs()))
    return verifyError(&node, "attributes are not normalized (a default is missing)");
  if (*inferred != node.type())
    return verifyError(&node, fmt::format("result type is {} but the operands give {}",
                                          node.type().str(), inferred->str()));
  return {};
}

// A symbolic type has one size per dim, each dim's shape entry is that size's
// upper bound, and every symbol it mentions is the graph's (same range).
Expected<void> verifySymbolicType(const Graph &graph, const Value &value) {
  const TensorType &type = value.type();
  if (!type.isSymbolic())
    return {};
  std::string what = value.name().empty() ? "a node result" : "'" + value.name() + "'";
  if (type.symbolicDims.size() != type.shape.size())
    return verifyError(nullptr, fmt::format("{} has {} symbolic sizes for rank {}", what,
                                            type.symbolicDims.size(), type.shape.size()));
  for (size_t i = 0; i < type.shape.size(); ++i) {
    const SizeExpr &size = type.symbolicDims[i];
    for (const SizeSymbol &symbol : size.symbols()) {
      const SizeSymbol *declared = graph.findSymbol(symbol.name);
      if (!declared || *declared != symbol)
        return verifyError(nullptr, fmt::format("{} {} uses {}, which the graph does not declare "
                                                "with that range",
                                                what, type.str(), symbol.str()));
    }
    auto range = size.bounds();
    if (!range || range->high != type.shape[i] || range->low < 0)
      return verifyError(nullptr, fmt::format("{} {}: dim {} has shape {} but its size {} "
                                              "ranges over [{}, {}]",
                                              what, type.str(), i, type.shape[i], size.str(),
                                              range ? range->low : 0, range ? range->high : 0));
  }
  return {};
}

} // namespace

Expected<void> verifyGraph(const Graph &graph) {
  std::unordered_set<const Value *> live;
  std::set<std::string> names;
  for (const auto *leaves : {&graph.inputs(), &graph.params()})
    for (const Value *value : *leaves) {
      if (!names.insert(value->name()).second)
        return verifyError(nullptr, fmt::format("name '{}' is defined twice", value->name()));
      KILN_TRY_VOID(verifySymbolicType(graph, *value));
      live.insert(value);
    }
  std::vector<Node *> nodes = graph.nodes();
  for (const Node *node : nodes)
    live.insert(node->result());
  for (const Node *node : nodes)
    KILN_TRY_VOID(verifyNode(*node, live));
  if (graph.topologicalOrder().size() != nodes.size())
    return verifyError(nullptr, "the graph has a cycle");
  if (graph.outputs().empty())
    return verifyError(nullptr, "the graph has no outputs");
  std::set<std::string> outputNames;
  for (const GraphOutput &output : graph.outputs()) {
    if (!live.contains(output.value))
      return verifyError(nullptr,
                         fmt::format("output '{}' is not a live value of this graph", output.name));
    if (!outputNames.insert(output.name).second)
      return verifyError(nullptr, fmt::format("output name '{}' is used twice", output.name));
  }
  return {};
}

} // namespace kiln::ir
