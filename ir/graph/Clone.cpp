// Deep copy of a graph.
#include "ir/graph/Clone.h"

#include <unordered_map>

namespace kiln::ir {

Expected<std::unique_ptr<Graph>> cloneGraph(const Graph &graph) {
  auto copy = std::make_unique<Graph>(graph.name());
  for (const SizeSymbol &symbol : graph.symbols())
    KILN_TRY_VOID(copy->declareSymbol(symbol));
  std::unordered_map<const Value *, Value *> mapped;
  for (Value *input : graph.inputs()) {
    KILN_TRY(Value * value, copy->addInput(input->name(), input->type()));
    mapped[input] = value;
  }
  for (Value *param : graph.params()) {
    KILN_TRY(Value * value, copy->addParam(param->name(), param->type()));
    mapped[param] = value;
  }
  for (Node *node : graph.topologicalOrder()) {
    std::vector<Value *> operands;
    for (Value *operand : node->operands())
      operands.push_back(mapped.at(operand));
    KILN_TRY(Value * value,
             copy->addNode(node->kind(), std::move(operands), node->attrs(), node->location()));
    mapped[node->result()] = value;
  }
  for (const GraphOutput &output : graph.outputs())
    KILN_TRY_VOID(copy->addOutput(output.name, mapped.at(output.value)));
  return copy;
}

} // namespace kiln::ir
