// "kmajor": e4m3 matmuls read both operands with K contiguous.
//
// Why: the tensor-core product for e4m3 (mma m16n8k32) takes each thread's
// operand bytes in runs along K. ldmatrix delivers such runs only from tiles
// stored with K contiguous -- its transposing form moves 16-bit pairs and
// would split the bytes -- so an operand stored the other way round is
// gathered byte by byte from shared memory. A weight [K, N] is the usual
// case: it becomes transpose(w) [N, K] read with transpose_b, and under the
// fp8 policy that transpose joins the cast to e4m3 the weight already gets.
//
// The rules, each documented in docs/passes.md:
//   matmul(a, b) {e4m3 operands, transpose_b false}
//     -> matmul(a, transpose(b, last two axes swapped)) {transpose_b true}
//   matmul(a, b) {e4m3 operands, transpose_a true}
//     -> matmul(transpose(a, last two axes swapped), b) {transpose_a false}
// Every rewrite moves data only: the graph computes the same values.
#include "passes/graph/GraphPasses.h"

#include "ir/graph/Graph.h"
#include "passes/graph/ReplaceNodes.h"

#include <numeric>

namespace kiln::passes {

namespace {

using ir::Node;
using ir::OpKind;
using ir::Value;

/// The permutation that swaps the last two axes of a rank-`rank` tensor.
std::vector<int64_t> swapLastTwo(size_t rank) {
  std::vector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[rank - 2], perm[rank - 1]);
  return perm;
}

class KMajorOperands final : public Pass {
public:
  std::string_view name() const override { return "kmajor"; }
  std::string_view description() const override {
    return "gives e4m3 matmuls operands with K contiguous (transposing the others)";
  }

  Expected<bool> run(ir::Graph &graph) override {
    return replaceNodes(graph, name(), [&](Node &node) { return kMajor(graph, node); });
  }

private:
  /// The matmul `node` with its e4m3 operands K-major, or nullptr when it has them so already.
  static Expected<Value *> kMajor(ir::Graph &graph, Node &node) {
    if (node.kind() != OpKind::MatMul || node.operand(0)->type().dtype != DType::F8E4M3 ||
        node.operand(1)->type().dtype != DType::F8E4M3)
      return nullptr;
    bool aAcrossK = ir::getBool(node.attrs(), "transpose_a");
    bool bAcrossK = !ir::getBool(node.attrs(), "transpose_b");
    if (!aAcrossK && !bAcrossK)
      return nullptr;
    const Location &at = node.location();
    std::vector<Value *> operands = node.operands();
    ir::AttrMap attrs = node.attrs();
    if (aAcrossK) {
      KILN_TRY(operands[0], transposed(graph, operands[0], at));
      attrs.insert_or_assign("transpose_a", false);
    }
    if (bAcrossK) {
      KILN_TRY(operands[1], transposed(graph, operands[1], at));
      attrs.insert_or_assign("transpose_b", true);
    }
    return graph.addNode(OpKind::MatMul, std::move(operands), std::move(attrs), at);
  }

  static Expected<Value *> transposed(ir::Graph &graph, Value *value, const Location &at) {
    size_t rank = value->type().shape.size();
    KILN_CHECK(rank >= 2, "a matmul operand of rank below 2");
    return graph.addNode(OpKind::Transpose, {value}, {{"perm", swapLastTwo(rank)}}, at);
  }
};

} // namespace

std::unique_ptr<Pass> createKMajorOperandsPass() { return std::make_unique<KMajorOperands>(); }

} // namespace kiln::passes
