// The reference interpreter: binds inputs and parameters by name, runs every
// node's reference function (a composite elementwise op's decomposition) in
// topological order, rounds each result to its dtype, and frees
// intermediates after their last use.
#include "ir/graph/Interpreter.h"

#include "ir/graph/Specialize.h"

#include <fmt/format.h>

#include <new>
#include <unordered_map>

namespace kiln::ir {
namespace {

std::string_view leafKindName(const Value &leaf) {
  return leaf.kind() == Value::Kind::Param ? "parameter" : "input";
}

/// Checks that `tensors` binds exactly the graph's inputs and parameters, each
/// with its declared type, and converts them to fp64 tensors.
Expected<std::unordered_map<const Value *, RefTensor>> bindLeaves(const Graph &graph,
                                                                  const NamedTensors &tensors) {
  std::unordered_map<const Value *, RefTensor> values;
  for (const auto &[name, tensor] : tensors) {
    if (!graph.findInput(name) && !graph.findParam(name))
      return makeError(ErrorCode::NotFound,
                       fmt::format("interpret: graph '{}' has no input or parameter named '{}' "
                                   "(got a tensor {} for it)",
                                   graph.name(), name, tensor.typeStr()));
  }
  for (const std::vector<Value *> *leaves : {&graph.inputs(), &graph.params()}) {
    for (const Value *leaf : *leaves) {
      auto found = tensors.find(leaf->name());
      if (found == tensors.end())
        return makeError(ErrorCode::NotFound,
                         fmt::format("interpret: missing {} '{}' of type {}", leafKindName(*leaf),
                                     leaf->name(), leaf->type().str()));
      const HostTensor &tensor = found->second;
      if (tensor.dtype() != leaf->type().dtype || tensor.shape() != leaf->type().shape)
        return makeError(tensor.dtype() != leaf->type().dtype ? ErrorCode::TypeMismatch
                                                              : ErrorCode::ShapeMismatch,
                         fmt::format("interpret: {} '{}' expects {}, got {}", leafKindName(*leaf),
                                     leaf->name(), leaf->type().str(), tensor.typeStr()));
      values.emplace(leaf, RefTensor{leaf->type(), tensor.toDoubles()});
    }
  }
  return values;
}

/// For each value, the position in `order` of the last node that reads it.
/// Values that are graph outputs are absent: they live to the end.
std::unordered_map<const Value *, size_t> lastUses(const Graph &graph,
                                                   const std::vector<Node *> &order) {
  std::unordered_map<const Value *, size_t> last;
  for (size_t position = 0; position < order.size(); ++position)
    for (const Value *operand : order[position]->operands())
      last[operand] = position;
  for (const GraphOutput &output : graph.outputs())
    last.erase(output.value);
  return last;
}

Expected<RefTensor> runNode(const Node &node,
                            const std::unordered_map<const Value *, RefTensor> &values) {
  std::vector<const RefTensor *> operands;
  operands.reserve(node.numOperands());
  for (const Value *operand : node.operands()) {
    auto found = values.find(operand);
    KILN_CHECK(found != values.end(),
               fmt::format("interpret: operand of {} is not computed yet", node.name()));
    operands.push_back(&found->second);
  }
  return evaluateNode(node, operands);
}

/// Runs the op's reference and rounds its result to the result dtype.
Expected<RefTensor> runReference(const Node &node, std::span<const RefTensor *const> operands) {
  const TensorType &type = node.type();
  ReferenceContext context{node.kind(), operands, node.attrs(), type};
  // A valid graph can still need more memory than the machine has: that is an
  // environment error for the caller, not a crash.
  Expected<std::vector<double>> data = std::vector<double>();
  try {
    data = node.info().reference(context);
  } catch (const std::bad_alloc &) {
    return makeError(ErrorCode::OutOfMemory,
                     fmt::format("interpret: out of memory computing {} ({} fp64 values)",
                                 node.name(), type.numElements()),
                     node.location().known() ? std::optional(node.location()) : std::nullopt);
  }
  if (!data) {
    Error error = std::move(data).error();
    if (!error.location() && node.location().known())
      return std::unexpected(std::move(error).at(node.location()));
    return std::unexpected(std::move(error));
  }
  KILN_CHECK(static_cast<int64_t>(data->size()) == type.numElements(),
             fmt::format("interpret: {} reference returned {} elements for {}", node.name(),
                         data->size(), type.str()));
  if (type.dtype != DType::F64)
    for (double &element : *data)
      element = roundToDType(element, type.dtype);
  return RefTensor{type, std::move(*data)};
}

/// A composite elementwise op: a scratch graph holds the node over inputs of
/// its operands' types, decomposes it, and every primitive of the
/// decomposition runs as interpret would run it.
Expected<RefTensor> runDecomposition(const Node &node,
                                     std::span<const RefTensor *const> operands) {
  Graph scratch(std::string(node.info().name));
  std::unordered_map<const Value *, RefTensor> values;
  std::vector<Value *> inputs;
  for (size_t i = 0; i < operands.size(); ++i) {
    KILN_TRY(Value * input, scratch.addInput(fmt::format("operand{}", i), operands[i]->type));
    values.emplace(input, *operands[i]);
    inputs.push_back(input);
  }
  KILN_TRY(Value * composite, scratch.addNode(node.kind(), inputs, node.attrs(), node.location()));
  Node &compositeNode = *composite->definingNode();
  KILN_TRY(Value * replacement, node.info().decompose(scratch, compositeNode));
  KILN_CHECK(replacement->type() == node.type(),
             fmt::format("interpret: the decomposition of {} gives {}, expected {}", node.name(),
                         replacement->type().str(), node.type().str()));
  scratch.eraseNode(&compositeNode);
  for (const Node *primitive : scratch.topologicalOrder()) {
    KILN_CHECK(!isCompositeElementwise(primitive->info()),
               fmt::format("interpret: the decomposition of {} contains {}, itself a composite",
                           node.name(), primitive->name()));
    KILN_TRY(RefTensor result, runNode(*primitive, values));
    values.insert_or_assign(primitive->result(), std::move(result));
  }
  return std::move(values.at(replacement));
}

} // namespace

Expected<RefTensor> evaluateNode(const Node &node, std::span<const RefTensor *const> operands) {
  if (isCompositeElementwise(node.info()))
    return runDecomposition(node, operands);
  return runReference(node, operands);
}

Expected<NamedTensors> interpret(const Graph &graph, const NamedTensors &inputsAndParams) {
  if (graph.isSymbolic()) {
    // The sizes come from the inputs; the specialized graph is then as static as any.
    LeafShapes shapes;
    for (const auto &[name, tensor] : inputsAndParams)
      shapes.emplace(name, tensor.shape());
    KILN_TRY(SymbolBindings bindings, bindSymbols(graph, shapes));
    KILN_TRY(std::unique_ptr<Graph> specialized, specialize(graph, bindings));
    return interpret(*specialized, inputsAndParams);
  }
  KILN_TRY(auto values, bindLeaves(graph, inputsAndParams));
  std::vector<Node *> order = graph.topologicalOrder();
  std::unordered_map<const Value *, size_t> last = lastUses(graph, order);
  for (size_t position = 0; position < order.size(); ++position) {
    const Node &node = *order[position];
    KILN_TRY(RefTensor result, runNode(node, values));
    // A dead node's result (no users, not an output) is never kept.
    if (node.result()->hasUses() || graph.isOutput(node.result()))
      values.insert_or_assign(node.result(), std::move(result));
    for (const Value *operand : node.operands()) {
      auto found = last.find(operand);
      if (found != last.end() && found->second == position)
        values.erase(operand);
    }
  }
  NamedTensors outputs;
  for (const GraphOutput &output : graph.outputs()) {
    const RefTensor &tensor = values.at(output.value);
    outputs.insert_or_assign(
        output.name, HostTensor::fromDoubles(tensor.type.dtype, tensor.type.shape, tensor.data));
  }
  return outputs;
}

} // namespace kiln::ir
