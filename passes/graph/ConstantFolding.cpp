// "fold": replaces a node whose operands are all `constant` or `iota` nodes by
// a `constant` holding its value, computed by the op's reference
// implementation and rounded to the result dtype exactly as the interpreter
// does (ir::evaluateNode), so folding never changes a result.
//
// Why: decompositions and the DSL produce arithmetic on literals (epsilon
// added to a constant, a causal mask built from iotas, scales multiplied
// together); computing it once at compile time removes kernels. Results larger
// than kMaxFoldedElements are left alone so the IR does not bloat, nodes that
// would take more than kMaxFoldWork steps are left alone so compiling stays
// fast, and a result whose elements are all equal folds to a one-value
// (splat) constant.
// Operands that become unused are left for "dce".
#include "passes/graph/GraphPasses.h"

#include "ir/graph/Graph.h"
#include "ir/graph/Interpreter.h"
#include "passes/graph/ReplaceNodes.h"

#include <algorithm>
#include <bit>

namespace kiln::passes {

namespace {

bool isFoldableLeaf(const ir::Value *value) {
  const ir::Node *node = value->definingNode();
  return node && (node->kind() == ir::OpKind::Constant || node->kind() == ir::OpKind::Iota);
}

bool shouldFold(const ir::Node &node) {
  if (node.numOperands() == 0) // constant and iota themselves
    return false;
  if (node.info().category == ir::OpCategory::Collective) // its value comes from the other ranks
    return false;
  if (node.type().numElements() > kMaxFoldedElements)
    return false;
  bool leaves =
      std::all_of(node.operands().begin(), node.operands().end(), [](const ir::Value *v) {
        return isFoldableLeaf(v) && v->type().numElements() <= kMaxFoldOperandElements;
      });
  return leaves && foldWorkEstimate(node) <= static_cast<double>(kMaxFoldWork);
}

bool sameBits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

class ConstantFolding final : public Pass {
public:
  std::string_view name() const override { return "fold"; }
  std::string_view description() const override {
    return "evaluates nodes whose operands are all constants into constants";
  }

  Expected<bool> run(ir::Graph &graph) override {
    // In topological order a folded node's users see the new constant when
    // their turn comes, so a whole constant expression folds in one run.
    return replaceNodes(graph, name(), [&](ir::Node &node) { return fold(graph, node); });
  }

private:
  /// The constant `node` evaluates to, or nullptr where it is not folded.
  static Expected<ir::Value *> fold(ir::Graph &graph, const ir::Node &node) {
    if (!shouldFold(node))
      return nullptr;
    std::vector<ir::RefTensor> operandValues;
    for (const ir::Value *operand : node.operands()) {
      auto value = ir::evaluateNode(*operand->definingNode(), {});
      if (!value)
        return nullptr;
      operandValues.push_back(std::move(*value));
    }
    std::vector<const ir::RefTensor *> operandPointers;
    for (const ir::RefTensor &value : operandValues)
      operandPointers.push_back(&value);
    // A reference that fails (an index out of range) is left in place: the
    // interpreter or the compiled kernel reports it when the graph runs.
    auto result = ir::evaluateNode(node, operandPointers);
    if (!result)
      return nullptr;
    return graph.addNode(ir::OpKind::Constant, {}, constantAttrs(*result), node.location());
  }

  static ir::AttrMap constantAttrs(const ir::RefTensor &tensor) {
    std::vector<double> values = tensor.data;
    bool splat = values.empty() || std::all_of(values.begin(), values.end(), [&](double v) {
                   return sameBits(v, values.front());
                 });
    if (splat)
      values = {values.empty() ? 0.0 : values.front()};
    return ir::AttrMap{{"dtype", tensor.type.dtype},
                       {"shape", tensor.type.shape},
                       {"value", std::move(values)}};
  }
};

} // namespace

double foldWorkEstimate(const ir::Node &node) {
  auto elements = [](const ir::TensorType &type) { return static_cast<double>(type.numElements()); };
  double result = elements(node.type());
  switch (node.kind()) {
  case ir::OpKind::MatMul: {
    const ir::TensorType &a = node.operand(0)->type();
    bool transposed = ir::getBool(node.attrs(), "transpose_a");
    return result * static_cast<double>(a.dim(a.rank() - (transposed ? 2 : 1)));
  }
  case ir::OpKind::Conv2D: {
    // The filter is [O, I/groups, KH, KW] (or [O, KH, KW, I/groups]): each
    // result element reads one output channel's slice of it.
    const ir::TensorType &filter = node.operand(1)->type();
    int64_t outputs = filter.dim(0);
    return outputs == 0 ? result : result * elements(filter) / static_cast<double>(outputs);
  }
  case ir::OpKind::MaxPool2D:
  case ir::OpKind::AvgPool2D: {
    const std::vector<int64_t> &kernel = ir::getInts(node.attrs(), "kernel");
    return result * static_cast<double>(kernel.at(0)) * static_cast<double>(kernel.at(1));
  }
  case ir::OpKind::ScaledDotProductAttention: {
    // Per query row (batch dims times Lq): Lk scores of depth D, then Lk
    // weighted value rows of depth Dv.
    const ir::Shape &shape = node.type().shape;
    double rows = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i)
      rows *= static_cast<double>(shape[i]);
    const ir::TensorType &k = node.operand(1)->type();
    double depths = static_cast<double>(k.dim(k.rank() - 1) + shape.back());
    return rows * static_cast<double>(k.dim(k.rank() - 2)) * depths;
  }
  default: {
    double operands = 0;
    for (const ir::Value *operand : node.operands())
      operands += elements(operand->type());
    return std::max(result, operands);
  }
  }
}

std::unique_ptr<Pass> createConstantFoldingPass() { return std::make_unique<ConstantFolding>(); }

} // namespace kiln::passes
