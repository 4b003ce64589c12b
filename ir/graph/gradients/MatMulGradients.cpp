// The gradient rule of matmul: two matmuls that honour transpose_a/_b (no
// explicit transposes are built) and sums over broadcast batch dims.
#include "ir/graph/Gradients.h"
#include "ir/graph/gradients/GradientBuilder.h"

namespace kiln::ir {

Expected<std::vector<Value *>> gradientMatMul(Graph &graph, const Node &node, Value *g) {
  // C = op(A) op(B) gives dop(A) = G op(B)^T and dop(B) = op(A)^T G; a
  // transposed operand takes the transpose of that, and (X Y)^T = Y^T X^T
  // turns every case into one matmul with transpose flags.
  GradientBuilder b(graph, node);
  Value *a = node.operand(0), *c = node.operand(1);
  bool transposeA = getBool(node.attrs(), "transpose_a");
  bool transposeB = getBool(node.attrs(), "transpose_b");
  auto matmul = [&](Value *x, Value *y, bool tx, bool ty) {
    return b.op(OpKind::MatMul, {x, y},
                {{"accumulate", node.attrs().at("accumulate")},
                 {"allow_tf32", node.attrs().at("allow_tf32")},
                 {"transpose_a", tx},
                 {"transpose_b", ty}});
  };
  Value *ga = nullptr, *gc = nullptr;
  if (!transposeA) {
    KILN_TRY(ga, matmul(g, c, false, !transposeB)); // G op(B)^T
  } else {
    KILN_TRY(ga, matmul(c, g, transposeB, true)); // op(B) G^T
  }
  if (!transposeB) {
    KILN_TRY(gc, matmul(a, g, !transposeA, false)); // op(A)^T G
  } else {
    KILN_TRY(gc, matmul(g, a, true, transposeA)); // G^T op(A)
  }
  KILN_TRY(Value * da, b.sumToShape(ga, a->type().sizes()));
  KILN_TRY(Value * dc, b.sumToShape(gc, c->type().sizes()));
  return std::vector<Value *>{da, dc};
}

} // namespace kiln::ir
