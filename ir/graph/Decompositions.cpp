// Decompositions of composite ops (softmax, layer norm, attention, ...) into
// the primitive ops of Ops.def; the `decompose` pass runs them.
//
// Softmax, log_softmax, layer_norm, batch_norm and attention compute in f64
// for f64, and in f32 for every other float dtype: f16, bf16 and the f8s cast
// their operands to f32 (exactly), compute there and cast the result back, so
// the result rounds to the narrow dtype once, as the fused reference's does
// (the design's precision rule: reductions, softmax and normalizations stay in
// fp32). Computing in the narrow dtype itself would round every intermediate,
// and in f8 worse than that: an epsilon of 1e-5 rounds to 0, so a constant
// row gives 0 * rsqrt(0) = NaN. Constants are splats of shape [] that
// broadcast. An empty tensor decomposes to itself: there is nothing to compute
// (and an empty softmax axis has no maximum).
#include "ir/graph/Decompositions.h"

#include "ir/graph/DecompositionBuilder.h"
#include "ir/graph/Graph.h"
#include "ir/graph/ShapeInference.h"

#include <limits>
#include <span>

namespace kiln::ir {

namespace {

using detail::Builder;

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

/// The dtype a decomposition of a node of `dtype` computes (and a matmul in it
/// accumulates) in: f64 for f64, f32 for every narrower float.
DType computeDTypeFor(DType dtype) { return dtype == DType::F64 ? DType::F64 : DType::F32; }

/// Calls `build` with the node's operands cast to its compute dtype and casts
/// what it returns back to the node's dtype.
template <typename BuildFn>
Expected<Value *> buildInComputeDType(Builder &b, const Node &node, BuildFn build) {
  DType dtype = node.type().dtype;
  DType compute = computeDTypeFor(dtype);
  std::vector<Value *> operands;
  for (Value *operand : node.operands()) {
    // Bool operands (attention's mask) are conditions, not numbers.
    if (operand->type().dtype == DType::Bool) {
      operands.push_back(operand);
      continue;
    }
    KILN_TRY(Value * wide, b.castTo(operand, compute));
    operands.push_back(wide);
  }
  KILN_TRY(Value * result, build(operands, compute));
  return b.castTo(result, dtype);
}

/// The most negative finite value of a compute dtype (f32 or f64).
double lowestFinite(DType compute) {
  return compute == DType::F64 ? std::numeric_limits<double>::lowest()
                               : static_cast<double>(std::numeric_limits<float>::lowest());
}

} // namespace

Expected<Value *> decomposeGlobalAvgPool(Graph &graph, Node &node) {
  // reduce_mean's reference is the same fp64 mean rounded once, so this needs
  // no compute dtype of its own.
  Builder b(graph, node);
  bool nhwc = getString(node.attrs(), "layout") == "nhwc";
  return b.reduce(OpKind::ReduceMean, node.operand(0), nhwc ? std::vector<int64_t>{1, 2}
                                                            : std::vector<int64_t>{2, 3});
}

Expected<Value *> decomposeSoftmax(Graph &graph, Node &node) {
  if (node.operand(0)->type().numElements() == 0)
    return node.operand(0);
  Builder b(graph, node);
  int64_t axis = normalizedAxis(node, node.type().rank());
  return buildInComputeDType(b, node, [&](std::span<Value *const> operands, DType) {
    return buildSoftmax(b, operands[0], axis);
  });
}

Expected<Value *> decomposeLogSoftmax(Graph &graph, Node &node) {
  // (x - max) - log(sum(exp(x - max))).
  if (node.operand(0)->type().numElements() == 0)
    return node.operand(0);
  Builder b(graph, node);
  int64_t axis = normalizedAxis(node, node.type().rank());
  return buildInComputeDType(
      b, node, [&](std::span<Value *const> operands, DType) -> Expected<Value *> {
        KILN_TRY(Value * max, b.reduce(OpKind::ReduceMax, operands[0], {axis}));
        KILN_TRY(Value * shifted, b.op(OpKind::Sub, {operands[0], max}));
        KILN_TRY(Value * exps, b.op(OpKind::Exp, {shifted}));
        KILN_TRY(Value * sum, b.reduce(OpKind::ReduceSum, exps, {axis}));
        KILN_TRY(Value * logSum, b.op(OpKind::Log, {sum}));
        return b.op(OpKind::Sub, {shifted, logSum});
      });
}

Expected<Value *> decomposeLayerNorm(Graph &graph, Node &node) {
  // centered = x - mean(x); var = mean(centered^2) (two passes, which is
  // stabler than mean(x^2) - mean(x)^2); (centered * rsqrt(var + eps)) *
  // scale + bias. scale and bias have shape x[axis:], which broadcasts.
  if (node.operand(0)->type().numElements() == 0)
    return node.operand(0);
  Builder b(graph, node);
  int64_t rank = node.type().rank();
  std::vector<int64_t> axes;
  for (int64_t axis = normalizedAxis(node, rank); axis < rank; ++axis)
    axes.push_back(axis);
  double epsilonValue = getFloat(node.attrs(), "epsilon");
  return buildInComputeDType(
      b, node, [&](std::span<Value *const> operands, DType compute) -> Expected<Value *> {
        Value *x = operands[0], *scale = operands[1], *bias = operands[2];
        KILN_TRY(Value * mean, b.reduce(OpKind::ReduceMean, x, axes));
        KILN_TRY(Value * centered, b.op(OpKind::Sub, {x, mean}));
        KILN_TRY(Value * squares, b.op(OpKind::Mul, {centered, centered}));
        KILN_TRY(Value * variance, b.reduce(OpKind::ReduceMean, squares, axes));
        KILN_TRY(Value * epsilon, b.scalar(epsilonValue, compute));
        KILN_TRY(Value * shiftedVariance, b.op(OpKind::Add, {variance, epsilon}));
        KILN_TRY(Value * inverseStd, b.op(OpKind::Rsqrt, {shiftedVariance}));
        KILN_TRY(Value * normalized, b.op(OpKind::Mul, {centered, inverseStd}));
        KILN_TRY(Value * scaled, b.op(OpKind::Mul, {normalized, scale}));
        return b.op(OpKind::Add, {scaled, bias});
      });
}

Expected<Value *> decomposeBatchNorm(Graph &graph, Node &node) {
  // factor = scale * rsqrt(var + eps) per channel (C elements, not N*C*H*W);
  // then (x - mean) * factor + bias, with the [C] vectors reshaped to
  // [C, 1, ..., 1] so they broadcast along the channel axis.
  if (node.operand(0)->type().numElements() == 0)
    return node.operand(0);
  Builder b(graph, node);
  int64_t rank = node.type().rank();
  int64_t axis = normalizedAxis(node, rank);
  Shape channelShape(static_cast<size_t>(rank - axis), 1);
  channelShape[0] = node.type().dim(axis);
  double epsilonValue = getFloat(node.attrs(), "epsilon");
  return buildInComputeDType(
      b, node, [&](std::span<Value *const> operands, DType compute) -> Expected<Value *> {
        Value *x = operands[0], *scale = operands[1], *bias = operands[2], *mean = operands[3],
              *variance = operands[4];
        KILN_TRY(Value * epsilon, b.scalar(epsilonValue, compute));
        KILN_TRY(Value * shiftedVariance, b.op(OpKind::Add, {variance, epsilon}));
        KILN_TRY(Value * inverseStd, b.op(OpKind::Rsqrt, {shiftedVariance}));
        KILN_TRY(Value * factor, b.op(OpKind::Mul, {scale, inverseStd}));
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
      });
}

namespace {

/// Softmax along the last axis of `scores` over the keys `visible` marks.
///
/// No -inf appears: f8e4m3 has none, and a mask value that is merely "very
/// negative" is not exact. Instead the row maximum is taken over
/// where(visible, s, lowest finite value), which is the maximum of the visible
/// scores (every row has one: causal attention needs Lk >= Lq, so key 0 is
/// always visible), and the exponentials of hidden keys are replaced by an
/// exact 0 after exp, whatever their score was. Where every visible score is
/// -inf (or one is NaN) this gives NaN, as the reference does. One difference
/// remains: the final matmul multiplies hidden keys' zero weights by their
/// values, so an inf or NaN in a hidden key's value makes NaN here where the
/// reference, which skips hidden keys, stays finite.
Expected<Value *> buildMaskedSoftmax(Builder &b, Value *scores, Value *visible, DType compute) {
  int64_t axis = scores->type().rank() - 1;
  KILN_TRY(Value * lowest, b.scalar(lowestFinite(compute), compute));
  KILN_TRY(Value * masked, b.op(OpKind::Where, {visible, scores, lowest}));
  KILN_TRY(Value * max, b.reduce(OpKind::ReduceMax, masked, {axis}));
  KILN_TRY(Value * shifted, b.op(OpKind::Sub, {masked, max}));
  KILN_TRY(Value * exps, b.op(OpKind::Exp, {shifted}));
  KILN_TRY(Value * zero, b.scalar(0.0, compute));
  KILN_TRY(Value * kept, b.op(OpKind::Where, {visible, exps, zero}));
  KILN_TRY(Value * sum, b.reduce(OpKind::ReduceSum, kept, {axis}));
  return b.op(OpKind::Div, {kept, sum});
}

/// The [Lq, Lk] bool mask of causal attention: key j is visible to query i
/// when j <= i + (Lk - Lq), which aligns the last query with the last key.
Expected<Value *> buildCausalMask(Builder &b, int64_t queries, int64_t keys) {
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
  return b.op(OpKind::Le, {column, lastKey});
}

} // namespace

Expected<Value *> decomposeAttention(Graph &graph, Node &node) {
  // softmax(q @ k^T * scale, masked) @ v, in the compute dtype, with matmuls
  // accumulating in it too.
  Builder b(graph, node);
  bool causal = getBool(node.attrs(), "causal");
  double scaleValue = getFloat(node.attrs(), "scale");
  return buildInComputeDType(
      b, node, [&](std::span<Value *const> operands, DType compute) -> Expected<Value *> {
        Value *q = operands[0], *k = operands[1], *v = operands[2];
        AttrMap matmulAttrs{{"accumulate", compute}};
        AttrMap transposedAttrs = matmulAttrs;
        transposedAttrs["transpose_b"] = true;
        KILN_TRY(Value * scores, b.op(OpKind::MatMul, {q, k}, transposedAttrs));
        KILN_TRY(Value * scale, b.scalar(scaleValue, compute));
        KILN_TRY(Value * scaled, b.op(OpKind::Mul, {scores, scale}));
        int64_t rank = scaled->type().rank();
        // A float mask adds to the scores; a bool one (and the causal mask) hides keys.
        Value *mask = operands.size() == 4 ? operands[3] : nullptr;
        Value *visible = nullptr;
        if (mask && mask->type().dtype != DType::Bool) {
          KILN_TRY(scaled, b.op(OpKind::Add, {scaled, mask}));
        } else if (mask) {
          visible = mask;
        }
        if (causal) {
          KILN_TRY(Value * causalVisible, buildCausalMask(b, scaled->type().dim(rank - 2),
                                                          scaled->type().dim(rank - 1)));
          if (visible) {
            KILN_TRY(visible, b.op(OpKind::And, {visible, causalVisible}));
          } else {
            visible = causalVisible;
          }
        }
        Value *weights = nullptr;
        if (visible) {
          // `where` broadcasts the mask over the scores.
          KILN_TRY(weights, buildMaskedSoftmax(b, scaled, visible, compute));
        } else {
          KILN_TRY(weights, buildSoftmax(b, scaled, rank - 1));
        }
        return b.op(OpKind::MatMul, {weights, v}, matmulAttrs);
      });
}

} // namespace kiln::ir
