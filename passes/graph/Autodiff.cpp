// Reverse-mode autodiff (appendGradients) and the "autodiff" pass built on it.
//
// The backward sweep visits, in reverse topological order, the nodes that lie
// on a path from some wrt to the loss: a node outside that set either cannot
// change the loss or does not depend on any wrt, so its gradient would be
// wasted work (and might need a rule that does not exist). A composite
// elementwise op, which has no rule, is differentiated through its
// decomposition.
#include "passes/graph/Autodiff.h"

#include "passes/graph/GraphPasses.h"

#include <fmt/format.h>
#include <map>
#include <ranges>
#include <set>

namespace kiln::passes {

namespace {

using ir::Node;
using ir::Value;

/// How an error names a value: "parameter 'w'", "input 'x'", "the result of matmul at f.cpp:3".
std::string describe(const Value *value) {
  switch (value->kind()) {
  case Value::Kind::Input: return fmt::format("input '{}'", value->name());
  case Value::Kind::Param: return fmt::format("parameter '{}'", value->name());
  case Value::Kind::Result: break;
  }
  const Node *node = value->definingNode();
  std::string where = node->location().known() ? " at " + node->location().str() : "";
  return fmt::format("the result of {}{}", node->name(), where);
}

std::optional<Location> locationOf(const Value *value) {
  if (value->definingNode() != nullptr && value->definingNode()->location().known())
    return value->definingNode()->location();
  return std::nullopt;
}

/// The values that depend on some wrt (the wrts included), by forward walk.
std::set<const Value *> dependentsOf(std::span<Value *const> wrt) {
  std::set<const Value *> seen(wrt.begin(), wrt.end());
  std::vector<const Value *> pending(wrt.begin(), wrt.end());
  while (!pending.empty()) {
    const Value *value = pending.back();
    pending.pop_back();
    for (const ir::Use &use : value->uses())
      if (seen.insert(use.user->result()).second)
        pending.push_back(use.user->result());
  }
  return seen;
}

/// The values the loss depends on (the loss included), by backward walk.
std::set<const Value *> dependenciesOf(const Value *loss) {
  std::set<const Value *> seen{loss};
  std::vector<const Value *> pending{loss};
  while (!pending.empty()) {
    const Value *value = pending.back();
    pending.pop_back();
    if (const Node *node = value->definingNode())
      for (const Value *operand : node->operands())
        if (seen.insert(operand).second)
          pending.push_back(operand);
  }
  return seen;
}

Expected<void> checkArguments(const Value *loss, std::span<Value *const> wrt, const Value *seed) {
  if (!isFloatingPoint(loss->type().dtype))
    return makeError(ErrorCode::TypeMismatch,
                     fmt::format("autodiff: the loss ({}) is {}; it must be a float value",
                                 describe(loss), loss->type().str()),
                     locationOf(loss));
  if (seed == nullptr && loss->type().numElements() != 1)
    return makeError(ErrorCode::ShapeMismatch,
                     fmt::format("autodiff: the loss ({}) is {} with {} elements; a loss without "
                                 "a seed must have one element (give the incoming gradient as "
                                 "the seed)",
                                 describe(loss), loss->type().str(), loss->type().numElements()),
                     locationOf(loss));
  if (seed != nullptr && seed->type() != loss->type())
    return makeError(ErrorCode::TypeMismatch,
                     fmt::format("autodiff: the seed is {}; it must have the loss's type {}",
                                 seed->type().str(), loss->type().str()),
                     locationOf(seed));
  for (size_t i = 0; i < wrt.size(); ++i) {
    KILN_CHECK(wrt[i] != nullptr, "appendGradients: a null wrt value");
    if (!isFloatingPoint(wrt[i]->type().dtype))
      return makeError(ErrorCode::TypeMismatch,
                       fmt::format("autodiff: wrt #{} ({}) is {}; only float values have "
                                   "gradients",
                                   i, describe(wrt[i]), wrt[i]->type().str()),
                       locationOf(wrt[i]));
  }
  return {};
}

/// Adds `gradient` to what `value` has received so far.
Expected<void> accumulate(ir::Graph &graph, std::map<const Value *, Value *> &gradients,
                          const Value *value, Value *gradient, const Location &location) {
  KILN_CHECK(gradient->type() == value->type(),
             fmt::format("a gradient rule returned {} for an operand of type {}",
                         gradient->type().str(), value->type().str()));
  auto [entry, inserted] = gradients.try_emplace(value, gradient);
  if (!inserted) {
    KILN_TRY(entry->second,
             graph.addNode(ir::OpKind::Add, {entry->second, gradient}, {}, location));
  }
  return {};
}

/// Erases the nodes autodiff created (ids from `firstId`) that nothing uses
/// and that are not among `kept`: rules build every operand's gradient, and
/// those of operands off the wrt paths are dropped.
void eraseUnusedNewNodes(ir::Graph &graph, uint64_t firstId, const std::vector<Value *> &kept) {
  std::set<const Value *> keep(kept.begin(), kept.end());
  std::vector<Node *> order = graph.topologicalOrder();
  for (Node *node : std::views::reverse(order))
    if (node->id() >= firstId && !node->result()->hasUses() && !keep.contains(node->result()) &&
        !graph.isOutput(node->result()))
      graph.eraseNode(node);
}

} // namespace

namespace {

/// A composite elementwise op has no rule of its own: its decomposition is
/// built beside it from the same operands and differentiated with the
/// primitives' rules, `resultGradient` seeding its result. The rebuilt
/// primitives the gradient does not read are erased with the other unused
/// new nodes. Non-float operands get no gradient.
Expected<std::vector<Value *>> gradientThroughDecomposition(ir::Graph &graph, Node &node,
                                                            Value *resultGradient) {
  KILN_TRY(Value * decomposed, node.info().decompose(graph, node));
  std::vector<Value *> floatOperands;
  for (Value *operand : node.operands())
    if (isFloatingPoint(operand->type().dtype))
      floatOperands.push_back(operand);
  KILN_TRY(std::vector<Value *> floatGradients,
           appendGradients(graph, decomposed, floatOperands, resultGradient));
  std::vector<Value *> gradients;
  size_t next = 0;
  for (Value *operand : node.operands())
    gradients.push_back(isFloatingPoint(operand->type().dtype) ? floatGradients[next++] : nullptr);
  return gradients;
}

} // namespace

Expected<std::vector<Value *>> appendGradients(ir::Graph &graph, Value *loss,
                                               std::span<Value *const> wrt, Value *seed) {
  KILN_CHECK(loss != nullptr, "appendGradients: a null loss");
  KILN_TRY_VOID(checkArguments(loss, wrt, seed));

  std::set<const Value *> dependents = dependentsOf(wrt);
  std::set<const Value *> dependencies = dependenciesOf(loss);
  std::vector<Node *> order = graph.topologicalOrder();
  uint64_t firstNewId = 0;
  for (Node *node : order)
    firstNewId = std::max(firstNewId, node->id() + 1);

  std::map<const Value *, Value *> gradients;
  Location lossLocation = locationOf(loss).value_or(Location{});
  if (seed == nullptr) {
    KILN_TRY(seed, graph.addNode(ir::OpKind::Constant, {},
                                 {{"dtype", loss->type().dtype},
                                  {"shape", loss->type().shape},
                                  {"value", std::vector<double>{1.0}}},
                                 lossLocation));
  }
  if (dependents.contains(loss))
    gradients[loss] = seed;

  for (Node *node : std::views::reverse(order)) {
    const Value *result = node->result();
    if (!dependents.contains(result) || !dependencies.contains(result))
      continue;
    auto incoming = gradients.find(result);
    if (incoming == gradients.end())
      continue; // only reached through integer or bool values: no gradient flows
    const ir::OpInfo &info = node->info();
    if (info.gradient == nullptr && !ir::isCompositeElementwise(info))
      return makeError(ErrorCode::Unsupported,
                       fmt::format("autodiff: {} has no gradient rule, but the loss's gradient "
                                   "must flow through it (its result is {})",
                                   node->name(), node->type().str()),
                       node->location().known() ? std::optional(node->location()) : std::nullopt);
    KILN_TRY(std::vector<Value *> operandGradients,
             info.gradient ? info.gradient(graph, *node, incoming->second)
                           : gradientThroughDecomposition(graph, *node, incoming->second));
    KILN_CHECK(operandGradients.size() == node->numOperands(),
               fmt::format("the gradient rule of {} returned {} gradients for {} operands",
                           node->name(), operandGradients.size(), node->numOperands()));
    for (size_t i = 0; i < operandGradients.size(); ++i) {
      const Value *operand = node->operand(i);
      if (operandGradients[i] == nullptr || !dependents.contains(operand))
        continue;
      KILN_TRY_VOID(accumulate(graph, gradients, operand, operandGradients[i], node->location()));
    }
  }

  std::vector<Value *> results;
  for (Value *value : wrt) {
    auto found = gradients.find(value);
    if (found != gradients.end()) {
      results.push_back(found->second);
      continue;
    }
    KILN_TRY(Value * zeros, graph.addNode(ir::OpKind::Constant, {},
                                          {{"dtype", value->type().dtype},
                                           {"shape", value->type().shape},
                                           {"value", std::vector<double>{0.0}}},
                                          lossLocation));
    results.push_back(zeros);
  }
  eraseUnusedNewNodes(graph, firstNewId, results);
  return results;
}

std::string gradientOutputName(std::string_view paramName) {
  return fmt::format("grad.{}", paramName);
}

namespace {

/// "autodiff": for a graph whose output "loss" is a one-element float value,
/// adds the output "grad.<name>" for every parameter. It exists so the
/// backward graph can be printed, checked and compiled like any other
/// (kiln-opt --passes=autodiff, lit tests).
class AutodiffPass final : public Pass {
public:
  std::string_view name() const override { return "autodiff"; }
  std::string_view description() const override {
    return "adds outputs grad.<param> with the gradient of the output \"loss\" w.r.t. each "
           "parameter";
  }

  Expected<bool> run(ir::Graph &graph) override {
    Value *loss = nullptr;
    for (const ir::GraphOutput &output : graph.outputs())
      if (output.name == "loss")
        loss = output.value;
    if (loss == nullptr)
      return makeError(ErrorCode::NotFound,
                       "autodiff: the graph has no output named \"loss\" to differentiate");
    std::vector<Value *> params = graph.params();
    if (params.empty())
      return false;
    KILN_TRY(std::vector<Value *> gradients, appendGradients(graph, loss, params));
    for (size_t i = 0; i < params.size(); ++i)
      KILN_TRY_VOID(graph.addOutput(gradientOutputName(params[i]->name()), gradients[i]));
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createAutodiffPass() { return std::make_unique<AutodiffPass>(); }

} // namespace kiln::passes
