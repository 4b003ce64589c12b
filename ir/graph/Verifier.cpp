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

} // namespace

Expected<void> verifyGraph(const Graph &graph) {
  std::unordered_set<const Value *> live;
  std::set<std::string> names;
  for (const auto *leaves : {&graph.inputs(), &graph.params()})
    for (const Value *value : *leaves) {
      if (!names.insert(value->name()).second)
        return verifyError(nullptr, fmt::format("name '{}' is defined twice", value->name()));
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
