// Direct gradient rules of softmax, log_softmax, layer_norm and batch_norm
// (inference form). Like their decompositions they compute in f32 for every
// float narrower than f32 (f64 for f64) and cast each gradient back to its
// operand's dtype, so gradients keep the graph's dtypes.
#include "ir/graph/Gradients.h"
#include "ir/graph/gradients/GradientBuilder.h"

namespace kiln::ir {

namespace {

using Gradients = std::vector<Value *>;

/// Casts each of `values` to `dtype`.
Expected<std::vector<Value *>> widen(GradientBuilder &b, std::vector<Value *> values, DType dtype) {
  for (Value *&value : values) {
    KILN_TRY(value, b.castTo(value, dtype));
  }
  return values;
}

/// Casts each gradient back to the dtype of the operand it belongs to.
Expected<Gradients> narrowToOperands(GradientBuilder &b, const Node &node, Gradients gradients) {
  for (size_t i = 0; i < gradients.size(); ++i)
    if (gradients[i] != nullptr) {
      KILN_TRY(gradients[i], b.castTo(gradients[i], node.operand(i)->type().dtype));
    }
  return gradients;
}

/// (x - mean) * rsqrt(var + epsilon), and rsqrt(var + epsilon), over `axes`
/// (kept as size 1), as the forward op computes them.
struct Normalized {
  Value *centered;
  Value *inverseStd;
  Value *normalized;
};

Expected<Normalized> normalizeOver(GradientBuilder &b, Value *x, std::vector<int64_t> axes,
                                   double epsilon) {
  KILN_TRY(Value * mean, b.meanKeep(x, axes));
  KILN_TRY(Value * centered, b.sub(x, mean));
  KILN_TRY(Value * squares, b.mul(centered, centered));
  KILN_TRY(Value * variance, b.meanKeep(squares, axes));
  KILN_TRY(Value * eps, b.scalar(epsilon, x->type().dtype));
  KILN_TRY(Value * shifted, b.add(variance, eps));
  KILN_TRY(Value * inverseStd, b.op(OpKind::Rsqrt, {shifted}));
  KILN_TRY(Value * normalized, b.mul(centered, inverseStd));
  return Normalized{centered, inverseStd, normalized};
}

} // namespace

Expected<Gradients> gradientSoftmax(Graph &graph, const Node &node, Value *g) {
  // dx = y (g - sum(g y)) along the axis.
  GradientBuilder b(graph, node);
  int64_t axis = normalizedAxisAttr(node, "axis", node.type().rank());
  DType compute = normalizationComputeDType(node.type().dtype);
  KILN_TRY(auto wide, widen(b, {g, resultOf(node)}, compute));
  Value *wg = wide[0], *y = wide[1];
  KILN_TRY(Value * gy, b.mul(wg, y));
  KILN_TRY(Value * dot, b.sumKeep(gy, {axis}));
  KILN_TRY(Value * centered, b.sub(wg, dot));
  KILN_TRY(Value * dx, b.mul(y, centered));
  return narrowToOperands(b, node, {dx});
}

Expected<Gradients> gradientLogSoftmax(Graph &graph, const Node &node, Value *g) {
  // dx = g - softmax(x) sum(g) along the axis; softmax(x) = exp(y).
  GradientBuilder b(graph, node);
  int64_t axis = normalizedAxisAttr(node, "axis", node.type().rank());
  DType compute = normalizationComputeDType(node.type().dtype);
  KILN_TRY(auto wide, widen(b, {g, resultOf(node)}, compute));
  Value *wg = wide[0], *y = wide[1];
  KILN_TRY(Value * probabilities, b.op(OpKind::Exp, {y}));
  KILN_TRY(Value * total, b.sumKeep(wg, {axis}));
  KILN_TRY(Value * spread, b.mul(probabilities, total));
  KILN_TRY(Value * dx, b.sub(wg, spread));
  return narrowToOperands(b, node, {dx});
}

Expected<Gradients> gradientLayerNorm(Graph &graph, const Node &node, Value *g) {
  // y = n scale + bias with n = (x - mean) rstd over axes [axis, rank):
  // dbias = sum(g), dscale = sum(g n) over the leading axes;
  // dx = rstd (dn - mean(dn) - n mean(dn n)) with dn = g scale.
  GradientBuilder b(graph, node);
  int64_t rank = node.type().rank();
  int64_t first = normalizedAxisAttr(node, "axis", rank);
  std::vector<int64_t> normalizedAxes, leadingAxes;
  for (int64_t axis = 0; axis < rank; ++axis)
    (axis < first ? leadingAxes : normalizedAxes).push_back(axis);
  DType compute = normalizationComputeDType(node.type().dtype);
  KILN_TRY(auto wide, widen(b, {g, node.operand(0), node.operand(1)}, compute));
  Value *wg = wide[0], *x = wide[1], *scale = wide[2];
  KILN_TRY(Normalized n, normalizeOver(b, x, normalizedAxes, getFloat(node.attrs(), "epsilon")));
  const Shape &paramShape = node.operand(1)->type().shape;
  KILN_TRY(Value * gn, b.mul(wg, n.normalized));
  KILN_TRY(Value * dscale, b.sumToShape(gn, paramShape));
  KILN_TRY(Value * dbias, b.sumToShape(wg, paramShape));
  KILN_TRY(Value * dn, b.mul(wg, scale));
  KILN_TRY(Value * meanDn, b.meanKeep(dn, normalizedAxes));
  KILN_TRY(Value * dnN, b.mul(dn, n.normalized));
  KILN_TRY(Value * meanDnN, b.meanKeep(dnN, normalizedAxes));
  KILN_TRY(Value * projection, b.mul(n.normalized, meanDnN));
  KILN_TRY(Value * centered, b.sub(dn, meanDn));
  KILN_TRY(Value * residual, b.sub(centered, projection));
  KILN_TRY(Value * dx, b.mul(residual, n.inverseStd));
  return narrowToOperands(b, node, {dx, dscale, dbias});
}

Expected<Gradients> gradientBatchNorm(Graph &graph, const Node &node, Value *g) {
  // y = (x - mean) f + bias with f = scale rstd, rstd = (var + eps)^-1/2, per
  // channel. Sums run over every axis but the channel axis:
  // dx = g f; dbias = sum(g); dscale = sum(g (x - mean)) rstd;
  // dmean = -sum(g) f; dvar = -0.5 sum(g (x - mean)) scale rstd^3.
  GradientBuilder b(graph, node);
  int64_t rank = node.type().rank();
  int64_t axis = normalizedAxisAttr(node, "axis", rank);
  Shape along(static_cast<size_t>(rank - axis), 1); // [C, 1, ..., 1]
  along[0] = node.type().dim(axis);
  Shape channels{node.type().dim(axis)};
  DType compute = normalizationComputeDType(node.type().dtype);
  std::vector<Value *> operands{g};
  for (Value *operand : node.operands())
    operands.push_back(operand);
  KILN_TRY(auto wide, widen(b, operands, compute));
  Value *wg = wide[0], *x = wide[1];
  std::vector<Value *> perChannel;
  for (size_t i = 2; i < wide.size(); ++i) {
    KILN_TRY(Value * reshaped, b.reshape(wide[i], along));
    perChannel.push_back(reshaped);
  }
  Value *scale = perChannel[0], *mean = perChannel[2], *variance = perChannel[3];
  KILN_TRY(Value * eps, b.scalar(getFloat(node.attrs(), "epsilon"), compute));
  KILN_TRY(Value * shifted, b.add(variance, eps));
  KILN_TRY(Value * inverseStd, b.op(OpKind::Rsqrt, {shifted}));
  KILN_TRY(Value * factor, b.mul(scale, inverseStd));
  KILN_TRY(Value * dx, b.mul(wg, factor));
  KILN_TRY(Value * centered, b.sub(x, mean));
  KILN_TRY(Value * gCentered, b.mul(wg, centered));
  KILN_TRY(Value * sumG, b.sumToShape(wg, along));
  KILN_TRY(Value * sumGCentered, b.sumToShape(gCentered, along));
  KILN_TRY(Value * dscale, b.mul(sumGCentered, inverseStd));
  KILN_TRY(Value * negSumG, b.neg(sumG));
  KILN_TRY(Value * dmean, b.mul(negSumG, factor));
  KILN_TRY(Value * cubeStd, b.mul(inverseStd, inverseStd));
  KILN_TRY(Value * cube, b.mul(cubeStd, inverseStd));
  KILN_TRY(Value * scaleCube, b.mul(scale, cube));
  KILN_TRY(Value * weighted, b.mul(sumGCentered, scaleCube));
  KILN_TRY(Value * dvar, b.mulScalar(weighted, -0.5));
  Gradients gradients{dx};
  for (Value *perChannelGradient : {dscale, sumG, dmean, dvar}) {
    KILN_TRY(Value * flat, b.reshape(perChannelGradient, channels));
    gradients.push_back(flat);
  }
  return narrowToOperands(b, node, gradients);
}

} // namespace kiln::ir
