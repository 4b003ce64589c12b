// The shared builders of the gradient rules.
#include "ir/graph/gradients/GradientBuilder.h"

#include "ir/graph/ShapeInference.h"

#include <algorithm>

namespace kiln::ir {

Expected<Value *> GradientBuilder::op(OpKind kind, std::vector<Value *> operands, AttrMap attrs) {
  return graph_.addNode(kind, std::move(operands), std::move(attrs), location_);
}

Expected<Value *> GradientBuilder::scalar(double value, DType dtype) {
  return op(OpKind::Constant, {},
            {{"dtype", dtype}, {"shape", Shape{}}, {"value", std::vector<double>{value}}});
}

Expected<Value *> GradientBuilder::zeros(const TensorType &type) {
  return op(OpKind::Constant, {},
            {{"dtype", type.dtype}, {"shape", type.shape}, {"value", std::vector<double>{0.0}}});
}

Expected<Value *> GradientBuilder::mulScalar(Value *x, double value) {
  KILN_TRY(Value * factor, scalar(value, x->type().dtype));
  return mul(x, factor);
}

Expected<Value *> GradientBuilder::sumKeep(Value *x, std::vector<int64_t> axes) {
  return op(OpKind::ReduceSum, {x}, {{"axes", std::move(axes)}, {"keepdims", true}});
}

Expected<Value *> GradientBuilder::meanKeep(Value *x, std::vector<int64_t> axes) {
  return op(OpKind::ReduceMean, {x}, {{"axes", std::move(axes)}, {"keepdims", true}});
}

Expected<Value *> GradientBuilder::castTo(Value *x, DType dtype) {
  if (x->type().dtype == dtype)
    return x;
  return op(OpKind::Cast, {x}, {{"dtype", dtype}});
}

Expected<Value *> GradientBuilder::reshape(Value *x, Shape shape) {
  return reshape(x, std::vector<SizeExpr>(shape.begin(), shape.end()));
}

Expected<Value *> GradientBuilder::broadcastTo(Value *x, Shape shape) {
  return broadcastTo(x, std::vector<SizeExpr>(shape.begin(), shape.end()));
}

namespace {

/// The attributes of a reshape or broadcast_to to `sizes`: `shape` alone when they are
/// static, else `shape` at their upper bounds and the symbolic `sizes`.
AttrMap targetAttrs(const std::vector<SizeExpr> &sizes) {
  Shape shape;
  bool symbolic = false;
  for (const SizeExpr &size : sizes) {
    shape.push_back(size.upperBound());
    symbolic = symbolic || !size.isConstant();
  }
  AttrMap attrs{{"shape", std::move(shape)}};
  if (symbolic)
    attrs.emplace("sizes", sizes);
  return attrs;
}

} // namespace

Expected<Value *> GradientBuilder::reshape(Value *x, const std::vector<SizeExpr> &sizes) {
  if (x->type().sizes() == sizes)
    return x;
  return op(OpKind::Reshape, {x}, targetAttrs(sizes));
}

Expected<Value *> GradientBuilder::broadcastTo(Value *x, const std::vector<SizeExpr> &sizes) {
  if (x->type().sizes() == sizes)
    return x;
  return op(OpKind::BroadcastTo, {x}, targetAttrs(sizes));
}

Expected<Value *> GradientBuilder::sizeOf(Value *x, std::span<const int64_t> axes, DType dtype) {
  KILN_TRY(SizeExpr size, sizeOverAxes(x->type(), axes));
  if (size.isConstant())
    return scalar(static_cast<double>(size.constant()), dtype);
  return op(OpKind::SymbolSize, {}, {{"dtype", dtype}, {"size", std::vector<SizeExpr>{size}}});
}

Expected<Value *> GradientBuilder::sumToShape(Value *gradient, const Shape &shape) {
  return sumToShape(gradient, std::vector<SizeExpr>(shape.begin(), shape.end()));
}

Expected<Value *> GradientBuilder::sumToShape(Value *gradient, const std::vector<SizeExpr> &sizes) {
  std::vector<SizeExpr> from = gradient->type().sizes();
  if (from == sizes)
    return gradient;
  int64_t extra = static_cast<int64_t>(from.size()) - static_cast<int64_t>(sizes.size());
  KILN_CHECK(extra >= 0, "sumToShape: the target has a higher rank than the gradient");
  const SizeExpr one(1);
  std::vector<int64_t> axes;
  for (int64_t axis = 0; axis < static_cast<int64_t>(from.size()); ++axis)
    if (axis < extra ||
        (sizes[static_cast<size_t>(axis - extra)] == one && from[static_cast<size_t>(axis)] != one))
      axes.push_back(axis);
  Value *summed = gradient;
  if (!axes.empty()) {
    KILN_TRY(summed, sumKeep(gradient, axes));
  }
  return reshape(summed, sizes);
}

Expected<Value *> GradientBuilder::dilate(Value *x, int64_t axis, int64_t step) {
  if (step == 1)
    return x;
  // [.., n, ..] -> unsqueeze [.., n, 1, ..] -> pad to [.., n, step, ..] ->
  // reshape [.., n * step, ..] -> drop the step - 1 trailing zeros.
  const Shape &shape = x->type().shape;
  int64_t n = shape[static_cast<size_t>(axis)];
  KILN_CHECK(n >= 1, "dilate needs a non-empty axis");
  KILN_TRY(Value * expanded,
           op(OpKind::Unsqueeze, {x}, {{"axes", std::vector<int64_t>{axis + 1}}}));
  std::vector<int64_t> low(shape.size() + 1, 0), high(shape.size() + 1, 0);
  high[static_cast<size_t>(axis + 1)] = step - 1;
  KILN_TRY(Value * padded, op(OpKind::Pad, {expanded}, {{"low", low}, {"high", high}}));
  Shape flat = shape;
  flat[static_cast<size_t>(axis)] = n * step;
  KILN_TRY(Value * interleaved, reshape(padded, flat));
  std::vector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1), stops = flat;
  stops[static_cast<size_t>(axis)] = (n - 1) * step + 1;
  return op(OpKind::Slice, {interleaved}, {{"starts", starts}, {"steps", steps}, {"stops", stops}});
}

int64_t normalizedAxisAttr(const Node &node, std::string_view name, int64_t rank) {
  std::optional<int64_t> axis = normalizeAxis(getInt(node.attrs(), name), rank);
  KILN_CHECK(axis.has_value(), "verified node has an axis out of range");
  return *axis;
}

std::vector<int64_t> normalizedAxesAttr(const Node &node, int64_t rank) {
  std::vector<int64_t> axes;
  for (int64_t axis : getInts(node.attrs(), "axes")) {
    std::optional<int64_t> normalized = normalizeAxis(axis, rank);
    KILN_CHECK(normalized.has_value(), "verified node has an axis out of range");
    axes.push_back(*normalized);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

} // namespace kiln::ir
