// The direct gradient rule of scaled_dot_product_attention: recompute the
// attention weights P, then the standard backward of O = P V with
// P = softmax(scale Q K^T [masked]). Computes in f32 for narrow floats (f64
// for f64), as the decomposition does, and casts back to each operand's dtype.
#include "ir/graph/Gradients.h"
#include "ir/graph/gradients/GradientBuilder.h"

#include <limits>

namespace kiln::ir {

namespace {

/// The [Lq, Lk] bool mask of causal attention: key j is visible to query i
/// when j <= i + (Lk - Lq) (the forward op's alignment).
Expected<Value *> causalMask(GradientBuilder &b, int64_t queries, int64_t keys) {
  Shape shape{queries, keys};
  KILN_TRY(Value * row,
           b.op(OpKind::Iota, {}, {{"axis", int64_t{0}}, {"dtype", DType::I64}, {"shape", shape}}));
  KILN_TRY(Value * column,
           b.op(OpKind::Iota, {}, {{"axis", int64_t{1}}, {"dtype", DType::I64}, {"shape", shape}}));
  KILN_TRY(Value * offset, b.scalar(static_cast<double>(keys - queries), DType::I64));
  KILN_TRY(Value * lastKey, b.add(row, offset));
  return b.op(OpKind::Le, {column, lastKey});
}

/// softmax along the last axis over the visible keys; hidden keys get an exact 0.
Expected<Value *> attentionWeights(GradientBuilder &b, Value *scores, Value *visible) {
  DType dtype = scores->type().dtype;
  int64_t last = scores->type().rank() - 1;
  Value *masked = scores;
  if (visible != nullptr) {
    double lowest = dtype == DType::F64 ? std::numeric_limits<double>::lowest()
                                        : double(std::numeric_limits<float>::lowest());
    KILN_TRY(Value * floor, b.scalar(lowest, dtype));
    KILN_TRY(masked, b.where(visible, scores, floor));
  }
  KILN_TRY(Value * max, b.op(OpKind::ReduceMax, {masked},
                             {{"axes", std::vector<int64_t>{last}}, {"keepdims", true}}));
  KILN_TRY(Value * shifted, b.sub(masked, max));
  KILN_TRY(Value * exps, b.op(OpKind::Exp, {shifted}));
  if (visible != nullptr) {
    KILN_TRY(Value * zero, b.scalar(0.0, dtype));
    KILN_TRY(exps, b.where(visible, exps, zero));
  }
  KILN_TRY(Value * sum, b.sumKeep(exps, {last}));
  return b.div(exps, sum);
}

} // namespace

Expected<std::vector<Value *>> gradientAttention(Graph &graph, const Node &node, Value *g) {
  // S = scale Q K^T, P = softmax(S), O = P V:
  // dV = P^T G; dP = G V^T; dS = P (dP - rowsum(dP P)); dQ = scale dS K;
  // dK = scale dS^T Q. Hidden keys have P = 0, so dS is 0 there.
  GradientBuilder b(graph, node);
  DType compute = normalizationComputeDType(node.type().dtype);
  std::vector<Value *> wide;
  for (Value *value : {node.operand(0), node.operand(1), node.operand(2), g}) {
    KILN_TRY(Value * cast, b.castTo(value, compute));
    wide.push_back(cast);
  }
  Value *q = wide[0], *k = wide[1], *v = wide[2], *wg = wide[3];
  double scaleValue = getFloat(node.attrs(), "scale");
  auto matmul = [&](Value *x, Value *y, bool tx, bool ty) {
    return b.op(OpKind::MatMul, {x, y},
                {{"accumulate", compute}, {"transpose_a", tx}, {"transpose_b", ty}});
  };
  KILN_TRY(Value * scores, matmul(q, k, false, true));
  KILN_TRY(Value * scaled, b.mulScalar(scores, scaleValue));
  // The optional mask: added to the scores (float) or hiding keys (bool), as in the forward op.
  Value *mask = node.numOperands() == 4 ? node.operand(3) : nullptr;
  bool additiveMask = mask && mask->type().dtype != DType::Bool;
  Value *visible = nullptr;
  if (additiveMask) {
    KILN_TRY(Value * wideMask, b.castTo(mask, compute));
    KILN_TRY(scaled, b.add(scaled, wideMask));
  } else if (mask) {
    visible = mask; // `where` and `and` broadcast it over the scores
  }
  if (getBool(node.attrs(), "causal")) {
    int64_t rank = scaled->type().rank();
    KILN_TRY(Value * causal,
             causalMask(b, scaled->type().dim(rank - 2), scaled->type().dim(rank - 1)));
    if (visible) {
      KILN_TRY(visible, b.op(OpKind::And, {visible, causal}));
    } else {
      visible = causal;
    }
  }
  KILN_TRY(Value * weights, attentionWeights(b, scaled, visible));
  int64_t last = weights->type().rank() - 1;
  KILN_TRY(Value * dv, matmul(weights, wg, true, false));
  KILN_TRY(Value * dWeights, matmul(wg, v, false, true));
  KILN_TRY(Value * product, b.mul(dWeights, weights));
  KILN_TRY(Value * rowDot, b.sumKeep(product, {last}));
  KILN_TRY(Value * centered, b.sub(dWeights, rowDot));
  KILN_TRY(Value * dScores, b.mul(weights, centered));
  KILN_TRY(Value * dScaled, b.mulScalar(dScores, scaleValue));
  KILN_TRY(Value * dq, matmul(dScaled, k, false, false));
  KILN_TRY(Value * dk, matmul(dScaled, q, true, false));
  std::vector<Value *> gradients;
  Value *unreduced[] = {dq, dk, dv};
  for (size_t i = 0; i < 3; ++i) {
    const TensorType &type = node.operand(i)->type();
    KILN_TRY(Value * summed, b.sumToShape(unreduced[i], type.sizes()));
    KILN_TRY(Value * narrow, b.castTo(summed, type.dtype));
    gradients.push_back(narrow);
  }
  // An additive mask's gradient is the scores' (it is added after the scale); a bool one has
  // none.
  if (mask) {
    Value *maskGradient = nullptr;
    if (additiveMask) {
      KILN_TRY(Value * summed, b.sumToShape(dScores, mask->type().sizes()));
      KILN_TRY(maskGradient, b.castTo(summed, mask->type().dtype));
    }
    gradients.push_back(maskGradient);
  }
  return gradients;
}

} // namespace kiln::ir
