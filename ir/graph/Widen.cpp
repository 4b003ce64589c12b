// Widening a graph's floats to a wider dtype.
#include "ir/graph/Widen.h"

#include <unordered_map>

namespace kiln::ir {

namespace {

TensorType widenType(TensorType type, DType from, DType to) {
  if (type.dtype == from)
    type.dtype = to;
  return type;
}

} // namespace

Expected<std::unique_ptr<Graph>> widenGraph(const Graph &graph, DType from, DType to) {
  KILN_CHECK(isFloatingPoint(from) && isFloatingPoint(to) &&
                 dtypeByteSize(to) > dtypeByteSize(from),
             "widenGraph widens a float dtype to a wider one");
  auto copy = std::make_unique<Graph>(graph.name());
  for (const SizeSymbol &symbol : graph.symbols())
    KILN_TRY_VOID(copy->declareSymbol(symbol));
  std::unordered_map<const Value *, Value *> mapped;
  for (Value *input : graph.inputs()) {
    KILN_TRY(Value * value, copy->addInput(input->name(), widenType(input->type(), from, to)));
    mapped[input] = value;
  }
  for (Value *param : graph.params()) {
    KILN_TRY(Value * value, copy->addParam(param->name(), widenType(param->type(), from, to)));
    mapped[param] = value;
  }
  for (Node *node : graph.topologicalOrder()) {
    std::vector<Value *> operands;
    for (Value *operand : node->operands())
      operands.push_back(mapped.at(operand));
    AttrMap attrs = node->attrs();
    for (auto &[name, attr] : attrs) {
      if (const DType *dtype = std::get_if<DType>(&attr); dtype && *dtype == from)
        attr = to;
      if (name == "allow_tf32")
        attr = false;
    }
    KILN_TRY(Value * value,
             copy->addNode(node->kind(), std::move(operands), std::move(attrs), node->location()));
    mapped[node->result()] = value;
  }
  for (const GraphOutput &output : graph.outputs())
    KILN_TRY_VOID(copy->addOutput(output.name, mapped.at(output.value)));
  return copy;
}

NamedTensors widenTensors(const NamedTensors &tensors, DType from, DType to) {
  NamedTensors widened;
  for (const auto &[name, tensor] : tensors)
    widened.emplace(name, tensor.dtype() == from ? tensor.castTo(to) : tensor);
  return widened;
}

} // namespace kiln::ir
