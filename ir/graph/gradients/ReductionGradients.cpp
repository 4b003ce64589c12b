// Gradient rules of the reductions: the result's gradient is broadcast back
// over the reduced axes, weighted per op (1, 1/count, the ties' share, the
// product of the other elements).
#include "ir/graph/Gradients.h"
#include "ir/graph/gradients/GradientBuilder.h"

namespace kiln::ir {

namespace {

using Gradients = std::vector<Value *>;

/// The reduced axes of a reduce_* node, in [0, rank) and sorted.
std::vector<int64_t> reducedAxes(const Node &node) {
  return normalizedAxesAttr(node, node.operand(0)->type().rank());
}

/// `value` (a reduction's result or its gradient) in keepdims form: the
/// reduced axes present as size 1, so it broadcasts against the operand.
Expected<Value *> keepDims(GradientBuilder &b, const Node &node, Value *value) {
  std::vector<SizeExpr> kept = node.operand(0)->type().sizes();
  for (int64_t axis : reducedAxes(node))
    kept[static_cast<size_t>(axis)] = SizeExpr(1);
  return b.reshape(value, kept);
}

/// `value` in keepdims form broadcast to the operand's sizes.
Expected<Value *> spread(GradientBuilder &b, const Node &node, Value *value) {
  KILN_TRY(Value * kept, keepDims(b, node, value));
  return b.broadcastTo(kept, node.operand(0)->type().sizes());
}

/// reduce_max/min: the gradient is split evenly among the elements equal to
/// the extremum (ties share it), so the gradients of a row sum to g.
Expected<Gradients> extremum(Graph &graph, const Node &node, Value *g) {
  GradientBuilder b(graph, node);
  Value *x = node.operand(0);
  DType dtype = x->type().dtype;
  KILN_TRY(Value * extreme, keepDims(b, node, resultOf(node)));
  KILN_TRY(Value * isExtreme, b.op(OpKind::Eq, {x, extreme}));
  KILN_TRY(Value * mask, b.maskOf(isExtreme, dtype));
  KILN_TRY(Value * count, b.sumKeep(mask, reducedAxes(node)));
  KILN_TRY(Value * keptG, keepDims(b, node, g));
  KILN_TRY(Value * share, b.div(keptG, count));
  KILN_TRY(Value * gradient, b.mul(mask, share));
  return Gradients{gradient};
}

} // namespace

Expected<Gradients> gradientReduceSum(Graph &graph, const Node &node, Value *g) {
  GradientBuilder b(graph, node);
  KILN_TRY(Value * gradient, spread(b, node, g));
  return Gradients{gradient};
}

Expected<Gradients> gradientReduceMean(Graph &graph, const Node &node, Value *g) {
  GradientBuilder b(graph, node);
  std::vector<int64_t> axes = reducedAxes(node);
  Value *input = node.operand(0);
  Value *scaled = nullptr;
  if (input->type().isSymbolic()) {
    // A mean over the run's batch divides by the run's count.
    KILN_TRY(Value * count, b.sizeOf(input, axes, g->type().dtype));
    KILN_TRY(scaled, b.div(g, count));
  } else {
    int64_t count = 1;
    for (int64_t axis : axes)
      count *= input->type().dim(axis);
    KILN_TRY(scaled, b.mulScalar(g, count == 0 ? 0.0 : 1.0 / static_cast<double>(count)));
  }
  KILN_TRY(Value * gradient, spread(b, node, scaled));
  return Gradients{gradient};
}

Expected<Gradients> gradientReduceMax(Graph &graph, const Node &node, Value *g) {
  return extremum(graph, node, g);
}

Expected<Gradients> gradientReduceMin(Graph &graph, const Node &node, Value *g) {
  return extremum(graph, node, g);
}

Expected<Gradients> gradientReduceProd(Graph &graph, const Node &node, Value *g) {
  // d prod / d x_i is the product of the other elements, computed without
  // dividing by a zero: with P the product of the nonzero elements and Z the
  // number of zeros in the group, it is P / x_i when Z = 0, P at the one zero
  // (and 0 elsewhere) when Z = 1, and 0 everywhere when Z >= 2.
  GradientBuilder b(graph, node);
  Value *x = node.operand(0);
  DType dtype = x->type().dtype;
  std::vector<int64_t> axes = reducedAxes(node);
  KILN_TRY(Value * zero, b.scalar(0.0, dtype));
  KILN_TRY(Value * one, b.scalar(1.0, dtype));
  KILN_TRY(Value * isZero, b.op(OpKind::Eq, {x, zero}));
  KILN_TRY(Value * nonzero, b.where(isZero, one, x));
  KILN_TRY(Value * product,
           b.op(OpKind::ReduceProd, {nonzero}, {{"axes", axes}, {"keepdims", true}}));
  KILN_TRY(Value * zeroMask, b.maskOf(isZero, dtype));
  KILN_TRY(Value * zeros, b.sumKeep(zeroMask, axes));
  KILN_TRY(Value * noZero, b.op(OpKind::Eq, {zeros, zero}));
  KILN_TRY(Value * oneZero, b.op(OpKind::Eq, {zeros, one}));
  KILN_TRY(Value * others, b.div(product, nonzero));
  KILN_TRY(Value * theZero, b.op(OpKind::And, {oneZero, isZero}));
  KILN_TRY(Value * atTheZero, b.where(theZero, product, zero));
  KILN_TRY(Value * partial, b.where(noZero, others, atTheZero));
  KILN_TRY(Value * keptG, keepDims(b, node, g));
  KILN_TRY(Value * gradient, b.mul(partial, keptG));
  return Gradients{gradient};
}

Expected<Gradients> gradientGlobalAvgPool(Graph &graph, const Node &node, Value *g) {
  // The result keeps H and W as size 1, so g broadcasts straight back.
  GradientBuilder b(graph, node);
  const TensorType &type = node.operand(0)->type();
  bool nhwc = getString(node.attrs(), "layout") == "nhwc";
  int64_t area = nhwc ? type.dim(1) * type.dim(2) : type.dim(2) * type.dim(3);
  KILN_TRY(Value * scaled, b.mulScalar(g, area == 0 ? 0.0 : 1.0 / static_cast<double>(area)));
  KILN_TRY(Value * gradient, b.broadcastTo(scaled, type.shape));
  return Gradients{gradient};
}

} // namespace kiln::ir
