// Decompositions of composite ops (softmax, layer norm, attention, ...) into
// the primitive ops of Ops.def; the `decompose` pass runs them.
//
// Each computes in the node's own dtype, one primitive at a time, so in a
// low-precision dtype every intermediate is rounded (the fused reference
// rounds only its result): decomposed f16 or bf16 results differ from the
// composite's by a few ulps. Constants are splats of shape [] that broadcast.
#include "ir/graph/Decompositions.h"

#include "ir/graph/Graph.h"
#include "ir/graph/ShapeInference.h"

#include <limits>

namespace kiln::ir {

namespace {

/// Adds nodes at the decomposed node's location, so an error in a primitive
/// still points at the user's line.
class Builder {
public:
  Builder(Graph &graph, const Node &node) : graph_(graph), location_(node.location()) {}

  Expected<Value *> op(OpKind kind, std::vector<Value *> operands, AttrMap attrs = {}) {
    return graph_.addNode(kind, std::move(operands), std::move(attrs), location_);
  }

  Expected<Value *> scalar(double value, DType dtype) {
    return op(OpKind::Constant, {},
              {{"dtype", dtype}, {"shape", Shape{}}, {"value", std::vector<double>{value}}});
  }

  Expected<Value *> reduce(OpKind kind, Value *x, std::vector<int64_t> axes) {
    return op(kind, {x}, {{"axes", std::move(axes)}, {"keepdims", true}});
  }

private:
  Graph &graph_;
  Location location_;
};

/// The axis attribute of `node`, normalized into [0, rank); the node was
/// verified, so it is in range.
int64_t normalizedAxis(const Node &node, int64_t rank) {
  std::optional<int64_t> axis = normalizeAxis(getInt(node.attrs(), "axis"), rank);
  KILN_CHECK(axis.has_value(), "verified node has an axis out of range");
  return *axis;
}

/// exp(x - max) / sum(exp(x - max)) along `axis`; subtracting the maximum keeps
/// exp from overflowing and changes nothing mathematically.
Expected<Value *> buildSoftmax(Builder &b, Value *x, int64_t axis) {
  KILN_TRY(Value * max, b.reduce(OpKind::ReduceMax, x, {axis}));
  KILN_TRY(Value * shifted, b.op(OpKind::Sub, {x, max}));
  KILN_TRY(Value * exps, b.op(OpKind::Exp, {shifted}));
  KILN_TRY(Value * sum, b.reduce(OpKind::ReduceSum, exps, {axis}));
  return b.op(OpKind::Div, {exps, sum});
}

/// The dtype a matmul inside a decomposition accumulates in: f64 for f64
/// (the reference is exact there), f32 for every narrower float.
DType accumulatorFor(DType dtype) { return dtype == DType::F64 ? DType::F64 : DType::F32; }

} // namespace

Expected<Value *> decomposeGlobalAvgPool(Graph &graph, Node &node) {
  Builder b(graph, node);
  bool nhwc = getString(node.attrs(), "layout") == "nhwc";
  return b.reduce(OpKind::ReduceMean, node.operand(0), nhwc ? std::vector<int64_t>{1, 2}
                                                            : std::vector<int64_t>{2, 3});
}

Expected<Value *> decomposeSoftmax(Graph &graph, Node &node) {
  Builder b(graph, node);
  Value *x = node.operand(0);
  return buildSoftmax(b, x, normalizedAxis(node, x->type().rank()));
}

Expected<Value *> decomposeLogSoftmax(Graph &graph, Node &node) {
  // (x - max) - log(sum(exp(x - max))).
  Builder b(graph, node);
  Value *x = node.operand(0);
  int64_t axis = normalizedAxis(node, x->type().rank());
  KILN_TRY(Value * max, b.reduce(OpKind::ReduceMax, x, {axis}));
  KILN_TRY(Value * shifted, b.op(OpKind::Sub, {x, max}));
  KILN_TRY(Value * exps, b.op(OpKind::Exp, {shifted}));
  KILN_TRY(Value * sum, b.reduce(OpKind::ReduceSum, exps, {axis}));
  KILN_TRY(Value * logSum, b.op(OpKind::Log, {sum}));
  return b.op(OpKind::Sub, {shifted, logSum});
}

Expected<Value *> decomposeLayerNorm(Graph &graph, Node &node) {
  // centered = x - mean(x); var = mean(centered^2) (two passes, which is
  // stabler than mean(x^2) - mean(x)^2); (centered * rsqrt(var + eps)) *
  // scale + bias. scale and bias have shape x[axis:], which broadcasts.
  Builder b(graph, node);
  Value *x = node.operand(0);
  Value *scale = node.operand(1);
  Value *bias = node.operand(2);
  DType dtype = x->type().dtype;
  int64_t rank = x->type().rank();
  std::vector<int64_t> axes;
  for (int64_t axis = normalizedAxis(node, rank); axis < rank; ++axis)
    axes.push_back(axis);
  KILN_TRY(Value * mean, b.reduce(OpKind::ReduceMean, x, axes));
  KILN_TRY(Value * centered, b.op(OpKind::Sub, {x, mean}));
  KILN_TRY(Value * squares, b.op(OpKind::Mul, {centered, centered}));
  KILN_TRY(Value * variance, b.reduce(OpKind::ReduceMean, squares, axes));
  KILN_TRY(Value * epsilon, b.scalar(getFloat(node.attrs(), "epsilon"), dtype));
  KILN_TRY(Value * shiftedVariance, b.op(OpKind::Add, {variance, epsilon}));
  KILN_TRY(Value * inverseStd, b.op(OpKind::Rsqrt, {shiftedVariance}));
  KILN_TRY(Value * normalized, b.op(OpKind::Mul, {centered, inverseStd}));
  KILN_TRY(Value * scaled, b.op(OpKind::Mul, {normalized, scale}));
  return b.op(OpKind::Add, {scaled, bias});
}

Expected<Value *> decomposeBatchNorm(Graph &graph, Node &node) {
  // factor = scale * rsqrt(var + eps) per channel (C elements, not N*C*H*W);
  // then (x - mean) * factor + bias, with the [C] vectors reshaped to
  // [C, 1, ..., 1] so they broadcast along the channel axis.
  Builder b(graph, node);
  Value *x = node.operand(0);
  Value *scale = node.operand(1);
  Value *bias = node.operand(2);
  Value *mean = node.operand(3);
  Value *variance = node.operand(4);
  DType dtype = x->type().dtype;
  int64_t rank = x->type().rank();
  int64_t axis = normalizedAxis(node, rank);
  KILN_TRY(Value * epsilon, b.scalar(getFloat(node.attrs(), "epsilon"), dtype));
  KILN_TRY(Value * shiftedVariance, b.op(OpKind::Add, {variance, epsilon}));
  KILN_TRY(Value * inverseStd, b.op(OpKind::Rsqrt, {shiftedVariance}));
  KILN_TRY(Value * factor, b.op(OpKind::Mul, {scale, inverseStd}));

  Shape channelShape(static_cast<size_t>(rank - axis), 1);
  channelShape[0] = x->type().dim(axis);
  auto alongChannels = [&](Value *perChannel) -> Expected<Value *> {
    if (channelShape.size() == 1) // channels last: [C] already broadcasts
      return perChannel;
    return b.op(OpKind::Reshape, {perChannel}, {{"shape", channelShape}});
  };
  KILN_TRY(Value * meanAlong, alongChannels(mean));
  KILN_TRY(Value * factorAlong, alongChannels(factor));
  KILN_TRY(Value * biasAlong, alongChannels(bias));
  KILN_TRY(Value * centered, b.op(OpKind::Sub, {x, meanAlong}));
  KILN_TRY(Value * normalized, b.op(OpKind::Mul, {centered, factorAlong}));
  return b.op(OpKind::Add, {normalized, biasAlong});
}

Expected<Value *> decomposeAttention(Graph &graph, Node &node) {
  // softmax(q @ k^T * scale, masked) @ v. The causal mask keeps key j for
  // query i when j <= i + (Lk - Lq) (queries aligned to the last keys) and
  // puts -inf elsewhere, so masked keys get weight exactly 0. The op requires
  // Lk >= Lq when causal, so every row keeps key 0 and its maximum is finite.
  Builder b(graph, node);
  Value *q = node.operand(0);
  Value *k = node.operand(1);
  Value *v = node.operand(2);
  DType dtype = q->type().dtype;
  AttrMap matmulAttrs{{"accumulate", accumulatorFor(dtype)}};
  AttrMap transposedAttrs = matmulAttrs;
  transposedAttrs["transpose_b"] = true;

  KILN_TRY(Value * scores, b.op(OpKind::MatMul, {q, k}, transposedAttrs));
  KILN_TRY(Value * scale, b.scalar(getFloat(node.attrs(), "scale"), dtype));
  KILN_TRY(Value * scaled, b.op(OpKind::Mul, {scores, scale}));
  int64_t rank = scaled->type().rank();
  if (getBool(node.attrs(), "causal")) {
    int64_t queries = scaled->type().dim(rank - 2);
    int64_t keys = scaled->type().dim(rank - 1);
    Shape maskShape{queries, keys};
    KILN_TRY(Value * row, b.op(OpKind::Iota, {},
                               {{"axis", int64_t{0}}, {"dtype", DType::I64}, {"shape", maskShape}}));
    KILN_TRY(Value * column, b.op(OpKind::Iota, {},
                                  {{"axis", int64_t{1}}, {"dtype", DType::I64}, {"shape", maskShape}}));
    Value *lastKey = row;
    if (keys != queries) {
      KILN_TRY(Value * offset, b.scalar(static_cast<double>(keys - queries), DType::I64));
      KILN_TRY(lastKey, b.op(OpKind::Add, {row, offset}));
    }
    KILN_TRY(Value * visible, b.op(OpKind::Le, {column, lastKey}));
    KILN_TRY(Value * hidden, b.scalar(-std::numeric_limits<double>::infinity(), dtype));
    KILN_TRY(scaled, b.op(OpKind::Where, {visible, scaled, hidden}));
  }
  KILN_TRY(Value * weights, buildSoftmax(b, scaled, rank - 1));
  return b.op(OpKind::MatMul, {weights, v}, matmulAttrs);
}

} // namespace kiln::ir
