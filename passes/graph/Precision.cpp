// "precision": applies a precision policy (passes/graph/PrecisionPolicy.h) to
// the graph's f32 contractions.
//
// Why: contractions are where almost all of a model's arithmetic and memory
// traffic is, and tensor cores run them several times faster on narrow
// operands, while the accuracy of a network depends mostly on accumulating in
// f32 and on keeping reductions, softmax and normalizations in f32. So only
// contractions change: tf32 sets their allow_tf32 flag; bf16-mixed,
// fp16-mixed and fp8 give them narrow operands (casts inserted before them,
// accumulate = f32) and cast their narrow result back to f32, which keeps
// every other op and the graph's interface in f32. A contraction operand that
// is already a narrow value widened to f32 (the result of another rewritten
// contraction, possibly reshaped or transposed) is used narrow directly: f32
// holds every bf16, f16 and f8 value, so narrowing the widened value again
// gives back the same bits, and the round trip costs only memory traffic.
//
// Contractions whose operands are not f32, or that accumulate in f64, are
// left as written: their precision was chosen explicitly. Composite ops
// (attention) are left too: decompose them first (compile() does) so their
// matmuls are visible. Casts of parameters and constants are ordinary nodes:
// `fold` turns a cast constant into a narrow constant, and a parameter's cast
// is computed once per run and shared by every contraction that reads it.
#include "passes/graph/GraphPasses.h"

#include "ir/graph/Graph.h"

#include <map>

namespace kiln::passes {

namespace {

using ir::Node;
using ir::OpKind;
using ir::Value;

/// Data movement that commutes with a cast bit for bit (it only moves
/// elements), so a narrow value can be moved instead of a widened one.
bool movesElementsOnly(OpKind kind) {
  switch (kind) {
  case OpKind::Reshape:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze:
  case OpKind::Transpose:
  case OpKind::BroadcastTo:
  case OpKind::Slice:
    return true;
  default:
    return false;
  }
}

class Precision final : public Pass {
public:
  explicit Precision(PrecisionPolicy policy) : policy_(policy) {}

  std::string_view name() const override { return "precision"; }
  std::string_view description() const override {
    return "applies the precision policy (--precision) to f32 matmul and conv2d: tf32, or "
           "bf16/f16/f8e4m3 operands with f32 accumulation";
  }

  Expected<bool> run(ir::Graph &graph) override {
    if (policy_ == PrecisionPolicy::Fp32)
      return false;
    narrowed_.clear();
    bool changed = false;
    for (Node *node : graph.topologicalOrder()) {
      if (!isF32Contraction(*node))
        continue;
      KILN_TRY(bool rewritten, policy_ == PrecisionPolicy::Tf32 ? allowTf32(graph, *node)
                                                                  : narrowOperands(graph, *node));
      changed |= rewritten;
    }
    return changed;
  }

private:
  static bool isF32Contraction(const Node &node) {
    return (node.kind() == OpKind::MatMul || node.kind() == OpKind::Conv2D) &&
           node.operand(0)->type().dtype == DType::F32 &&
           ir::getType(node.attrs(), "accumulate") == DType::F32;
  }

  /// A copy of contraction `node` on `operands` with `attrs`.
  static Expected<Value *> rebuild(ir::Graph &graph, Node &node, std::vector<Value *> operands,
                                   ir::AttrMap attrs) {
    return graph.addNode(node.kind(), std::move(operands), std::move(attrs), node.location());
  }

  static Expected<bool> allowTf32(ir::Graph &graph, Node &node) {
    if (ir::getBool(node.attrs(), "allow_tf32"))
      return false;
    ir::AttrMap attrs = node.attrs();
    attrs["allow_tf32"] = true;
    KILN_TRY(Value * replacement, rebuild(graph, node, node.operands(), std::move(attrs)));
    graph.replaceAllUsesWith(node.result(), replacement);
    graph.eraseNode(&node);
    return true;
  }

  Expected<bool> narrowOperands(ir::Graph &graph, Node &node) {
    DType narrow = *contractionOperandDType(policy_);
    std::vector<Value *> operands;
    for (Value *operand : node.operands()) {
      KILN_TRY(Value * value, narrowValue(graph, operand, narrow, node.location()));
      operands.push_back(value);
    }
    ir::AttrMap attrs = node.attrs();
    attrs["allow_tf32"] = false; // a flag of f32 operands only
    KILN_TRY(Value * contraction, rebuild(graph, node, std::move(operands), std::move(attrs)));
    KILN_TRY(Value * widened, graph.addNode(OpKind::Cast, {contraction}, {{"dtype", DType::F32}},
                                            node.location()));
    graph.replaceAllUsesWith(node.result(), widened);
    graph.eraseNode(&node);
    return true;
  }

  /// `value` (f32) as a `narrow` value: a cast, made once per value and
  /// shared by every contraction that reads it, unless the value already is
  /// a narrow one widened (and moved), which is then used as it is.
  Expected<Value *> narrowValue(ir::Graph &graph, Value *value, DType narrow,
                                const Location &location) {
    auto found = narrowed_.find(value);
    if (found != narrowed_.end())
      return found->second;
    KILN_TRY(Value * result, unwiden(graph, value, narrow));
    if (!result) {
      KILN_TRY(result, graph.addNode(OpKind::Cast, {value}, {{"dtype", narrow}}, location));
    }
    narrowed_.emplace(value, result);
    return result;
  }

  /// The narrow value `value` holds exactly: x for cast(x, f32) with x of
  /// dtype `narrow`, and the same data movement applied to it for a reshape,
  /// transpose, ... of such a cast. nullptr when `value` is not of that form.
  Expected<Value *> unwiden(ir::Graph &graph, Value *value, DType narrow) {
    Node *producer = value->definingNode();
    if (!producer)
      return nullptr;
    if (producer->kind() == OpKind::Cast)
      return producer->operand(0)->type().dtype == narrow ? producer->operand(0) : nullptr;
    if (!movesElementsOnly(producer->kind()))
      return nullptr;
    if (auto found = narrowed_.find(value); found != narrowed_.end())
      return found->second;
    KILN_TRY(Value * source, unwiden(graph, producer->operand(0), narrow));
    if (!source)
      return nullptr;
    KILN_TRY(Value * moved, graph.addNode(producer->kind(), {source}, producer->attrs(),
                                          producer->location()));
    narrowed_.emplace(value, moved);
    return moved;
  }

  PrecisionPolicy policy_;
  /// f32 values and their narrow counterparts made by this run.
  std::map<const Value *, Value *> narrowed_;
};

} // namespace

std::unique_ptr<Pass> createPrecisionPass(PrecisionPolicy policy) {
  return std::make_unique<Precision>(policy);
}

} // namespace kiln::passes
