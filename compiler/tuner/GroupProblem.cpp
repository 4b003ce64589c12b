// Extracting a fusion group as a graph of its own, and its reference answer.
#include "compiler/tuner/GroupProblem.h"

#include "ir/graph/Interpreter.h"

#include <fmt/format.h>

#include <map>

namespace kiln::tuning {

namespace {

/// Whether `value` is read as indices somewhere in the group (any value there
/// would be out of range but 0).
bool feedsIndices(const ir::Value *value, const passes::FusionGroup &group) {
  for (const ir::Use &use : value->uses()) {
    if (!group.contains(use.user))
      continue;
    ir::OpKind kind = use.user->kind();
    if ((kind == ir::OpKind::Gather || kind == ir::OpKind::TakeAlongAxis) &&
        use.operandIndex == 1)
      return true;
  }
  return false;
}

HostTensor randomInput(const ir::Value *value, const passes::FusionGroup &group, Rng &rng) {
  const ir::TensorType &type = value->type();
  if (isFloatingPoint(type.dtype))
    return HostTensor::randomNormal(type.dtype, type.shape, rng);
  if (feedsIndices(value, group) || type.dtype == DType::Bool)
    return HostTensor::randomUniform(type.dtype, type.shape, rng, 0.0, 1.0); // 0, or bool
  return HostTensor::randomUniform(type.dtype, type.shape, rng, -4.0, 5.0);
}

} // namespace

Expected<std::unique_ptr<ir::Graph>> extractGroupGraph(const ir::Graph &graph,
                                                       const passes::FusionGroup &group) {
  auto extracted = std::make_unique<ir::Graph>(fmt::format("group{}", group.id));
  // A symbolic group keeps its symbols: it is tuned at their maxima (its inputs' shapes),
  // the sizes its schedule is chosen for (docs/dynamic-shapes.md).
  for (const ir::SizeSymbol &symbol : graph.symbols())
    KILN_TRY_VOID(extracted->declareSymbol(symbol));
  std::map<const ir::Value *, ir::Value *> mapped;
  for (size_t i = 0; i < group.inputs.size(); ++i) {
    KILN_TRY(ir::Value * input,
             extracted->addInput(fmt::format("in{}", i), group.inputs[i]->type()));
    mapped[group.inputs[i]] = input;
  }
  for (const ir::Node *node : group.nodes) {
    std::vector<ir::Value *> operands;
    for (const ir::Value *operand : node->operands()) {
      auto it = mapped.find(operand);
      if (it == mapped.end())
        return makeError(ErrorCode::VerifyError,
                         fmt::format("group {}: node {} reads a value that is neither a group "
                                     "input nor computed in the group",
                                     group.id, node->result()->name()));
      operands.push_back(it->second);
    }
    KILN_TRY(ir::Value * result,
             extracted->addNode(node->kind(), std::move(operands), node->attrs(),
                                node->location()));
    mapped[node->result()] = result;
  }
  if (group.root == nullptr)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("group {} has no root to tune", group.id));
  KILN_TRY_VOID(extracted->addOutput("out", mapped.at(group.root->result())));
  return extracted;
}

Expected<GroupProblem> makeGroupProblem(const ir::Graph &graph, const passes::FusionGroup &group,
                                        int numInputSets, uint64_t seed) {
  GroupProblem problem;
  KILN_TRY(problem.graph, extractGroupGraph(graph, group));
  problem.outputType = group.root->type();
  for (const ir::SizeSymbol &symbol : graph.symbols())
    problem.sizes.push_back(symbol.max);
  Rng rng(seed);
  for (int s = 0; s < std::max(1, numInputSets); ++s) {
    std::vector<HostTensor> inputs;
    for (const ir::Value *input : group.inputs)
      inputs.push_back(randomInput(input, group, rng));
    problem.inputSets.push_back(std::move(inputs));
  }
  NamedTensors named;
  for (size_t i = 0; i < group.inputs.size(); ++i)
    named.emplace(fmt::format("in{}", i), problem.inputSets[0][i]);
  KILN_TRY(NamedTensors outputs, ir::interpret(*problem.graph, named));
  problem.expected = std::move(outputs.at("out"));
  return problem;
}

} // namespace kiln::tuning
