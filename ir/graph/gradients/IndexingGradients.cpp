// Gradient rules of gather and take_along_axis. There is no scatter op, so
// the data's gradient is built from a one-hot of the indices (eq against an
// iota): a matmul for gather, a masked sum for take_along_axis. Indices take
// no gradient. Negative indices count from the end, as in the forward op.
#include "ir/graph/Gradients.h"
#include "ir/graph/gradients/GradientBuilder.h"

#include <fmt/format.h>

#include <numeric>

namespace kiln::ir {

namespace {

using Gradients = std::vector<Value *>;

/// `indices` with negative entries wrapped by `size`, as the forward op reads them.
Expected<Value *> wrappedIndices(GradientBuilder &b, Value *indices, int64_t size) {
  DType dtype = indices->type().dtype;
  KILN_TRY(Value * zero, b.scalar(0.0, dtype));
  KILN_TRY(Value * extent, b.scalar(static_cast<double>(size), dtype));
  KILN_TRY(Value * negative, b.op(OpKind::Lt, {indices, zero}));
  KILN_TRY(Value * shifted, b.add(indices, extent));
  return b.where(negative, shifted, indices);
}

/// A 0/1 tensor of `dtype`: `indices` with a new axis of `size` inserted at
/// `axis`, 1 where the new axis' position equals the index.
Expected<Value *> oneHot(GradientBuilder &b, Value *indices, int64_t axis, int64_t size,
                         DType dtype) {
  KILN_TRY(Value * wrapped, wrappedIndices(b, indices, size));
  KILN_TRY(Value * expanded,
           b.op(OpKind::Unsqueeze, {wrapped}, {{"axes", std::vector<int64_t>{axis}}}));
  Shape shape = expanded->type().shape;
  shape[static_cast<size_t>(axis)] = size;
  KILN_TRY(
      Value * positions,
      b.op(OpKind::Iota, {}, {{"axis", axis}, {"dtype", indices->type().dtype}, {"shape", shape}}));
  KILN_TRY(Value * hit, b.op(OpKind::Eq, {expanded, positions}));
  return b.maskOf(hit, dtype);
}

/// gather's data gradient when the count of indices n is known only at run time (a
/// symbolic batch of token ids): the one-hot is built [n, S], n leading, and the product
/// sums over it as a GEMM whose K is the run's n (transposed A: slower than the static
/// form's [S, n], which would put the symbol past the leading axis).
Expected<Gradients> gatherGradientOverRuntimeIndices(GradientBuilder &b, const Node &node, Value *g,
                                                     int64_t size, int64_t outer, int64_t inner) {
  Value *data = node.operand(0), *indices = node.operand(1);
  if (outer != 1)
    return makeError(ErrorCode::Unsupported,
                     fmt::format("gather: the gradient of data {} along axis > 0 with indices "
                                 "{} of a symbolic size is not built yet (docs/dynamic-shapes.md)",
                                 data->type().str(), indices->type().str()));
  std::vector<int64_t> all(static_cast<size_t>(indices->type().rank()));
  std::iota(all.begin(), all.end(), 0);
  KILN_TRY(SizeExpr count, sizeOverAxes(indices->type(), all));
  KILN_TRY(Value * flatIndices, b.reshape(indices, std::vector<SizeExpr>{count}));
  KILN_TRY(Value * wrapped, wrappedIndices(b, flatIndices, size));
  KILN_TRY(Value * column, b.op(OpKind::Unsqueeze, {wrapped}, {{"axes", std::vector<int64_t>{1}}}));
  KILN_TRY(
      Value * positions,
      b.op(OpKind::Iota, {},
           {{"axis", int64_t{1}}, {"dtype", indices->type().dtype}, {"shape", Shape{1, size}}}));
  KILN_TRY(Value * hit, b.op(OpKind::Eq, {column, positions}));
  KILN_TRY(Value * hot, b.maskOf(hit, data->type().dtype));
  KILN_TRY(Value * flatG, b.reshape(g, std::vector<SizeExpr>{count, SizeExpr(inner)}));
  KILN_TRY(Value * scattered, b.op(OpKind::MatMul, {hot, flatG},
                                   {{"accumulate", normalizationComputeDType(data->type().dtype)},
                                    {"transpose_a", true}}));
  KILN_TRY(Value * gradient, b.reshape(scattered, data->type().shape));
  return Gradients{gradient, nullptr};
}

} // namespace

Expected<Gradients> gradientGather(Graph &graph, const Node &node, Value *g) {
  // With data [outer, S, inner] and n = numel(indices), the result is
  // [outer, n, inner] and d data = onehot[S, n] @ g[outer, n, inner] (built [S, n], not
  // transposed in the product: the GEMM packs a row-major A faster, 1.4 against 1.9 ms for
  // an LSTM's [1000, 640] x [640, 128] on two AVX2 cores).
  GradientBuilder b(graph, node);
  Value *data = node.operand(0), *indices = node.operand(1);
  const TensorType &type = data->type();
  int64_t axis = normalizedAxisAttr(node, "axis", type.rank());
  int64_t size = type.dim(axis), outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= type.dim(d);
  for (int64_t d = axis + 1; d < type.rank(); ++d)
    inner *= type.dim(d);
  int64_t count = indices->type().numElements();
  if (count == 0 || type.numElements() == 0) {
    KILN_TRY(Value * zeros, b.zeros(type));
    return Gradients{zeros, nullptr};
  }
  if (indices->type().isSymbolic())
    return gatherGradientOverRuntimeIndices(b, node, g, size, outer, inner);
  KILN_TRY(Value * flatIndices, b.reshape(indices, Shape{count}));
  KILN_TRY(Value * hot, oneHot(b, flatIndices, 0, size, type.dtype));
  KILN_TRY(Value * flatG, b.reshape(g, Shape{outer, count, inner}));
  KILN_TRY(Value * scattered, b.op(OpKind::MatMul, {hot, flatG},
                                   {{"accumulate", normalizationComputeDType(type.dtype)}}));
  KILN_TRY(Value * gradient, b.reshape(scattered, type.shape));
  return Gradients{gradient, nullptr};
}

Expected<Gradients> gradientTakeAlongAxis(Graph &graph, const Node &node, Value *g) {
  // indices [.., L, ..] against data [.., S, ..]: a one-hot [.., L, S, ..]
  // times g [.., L, 1, ..], summed over L.
  GradientBuilder b(graph, node);
  Value *data = node.operand(0), *indices = node.operand(1);
  const TensorType &type = data->type();
  int64_t axis = normalizedAxisAttr(node, "axis", type.rank());
  if (indices->type().numElements() == 0 || type.numElements() == 0) {
    KILN_TRY(Value * zeros, b.zeros(type));
    return Gradients{zeros, nullptr};
  }
  KILN_TRY(Value * hot, oneHot(b, indices, axis + 1, type.dim(axis), type.dtype));
  KILN_TRY(Value * expandedG,
           b.op(OpKind::Unsqueeze, {g}, {{"axes", std::vector<int64_t>{axis + 1}}}));
  KILN_TRY(Value * products, b.mul(hot, expandedG));
  KILN_TRY(Value * summed, b.op(OpKind::ReduceSum, {products},
                                {{"axes", std::vector<int64_t>{axis}}, {"keepdims", false}}));
  return Gradients{summed, nullptr};
}

} // namespace kiln::ir
