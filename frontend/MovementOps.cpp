// The DSL's data-movement op functions and leaves (iota, constant). reshape's
// -1 and flatten are resolved here into the explicit shape the IR stores.
#include "frontend/OpBuilder.h"
#include "frontend/Ops.h"
#include "ir/graph/ShapeInference.h"

#include <fmt/format.h>

namespace kiln {

using detail::buildOp;
using detail::failOn;
using ir::OpKind;

namespace {

/// A reshape to symbolic sizes: `shape` holds their upper bounds, `sizes` the
/// sizes themselves (docs/dynamic-shapes.md).
Tensor reshapeToSizes(Tensor x, std::vector<ir::SizeExpr> sizes, std::source_location loc) {
  std::vector<int64_t> shape;
  for (const ir::SizeExpr &size : sizes) {
    auto range = size.bounds();
    if (!range)
      return failOn(x, range.error().code(), "reshape: " + range.error().message(), loc);
    shape.push_back(range->high);
  }
  return buildOp(OpKind::Reshape, {x}, {{"shape", std::move(shape)}, {"sizes", std::move(sizes)}},
                 loc);
}

/// The size a -1 stands for: `total` divided by `known`, when that is a size for every value
/// of the symbols (a static quotient, or the symbolic part of `total` over a static `known`).
std::optional<ir::SizeExpr> inferredSize(const ir::SizeExpr &total, const ir::SizeExpr &known) {
  std::optional<ir::SizeExpr> quotient;
  if (known.isConstant()) {
    if (known.constant() <= 0)
      return std::nullopt;
    if (auto divided = ir::floorDiv(total, known.constant()))
      quotient = *divided;
  } else if (known.upperBound() > 0) {
    // [N, -1] of N*C*H*W elements: the -1 is static, the quotient of the upper bounds.
    quotient = ir::SizeExpr(total.upperBound() / known.upperBound());
  }
  if (!quotient)
    return std::nullopt;
  auto back = ir::multiply(*quotient, known);
  if (!back || *back != total)
    return std::nullopt;
  return quotient;
}

} // namespace

Tensor reshapeSizes(Tensor x, std::vector<ir::SizeExpr> sizes, std::source_location loc) {
  if (!x.ok())
    return x;
  std::optional<size_t> inferred;
  ir::SizeExpr known(1), total(1);
  for (const ir::SizeExpr &size : x.type().sizes())
    if (auto next = ir::multiply(total, size))
      total = *next;
    else
      return failOn(x, next.error().code(), "reshape: " + next.error().message(), loc);
  for (size_t i = 0; i < sizes.size(); ++i) {
    bool minusOne = sizes[i].isConstant() && sizes[i].constant() == -1;
    if ((sizes[i].isConstant() && sizes[i].constant() < -1) || (minusOne && inferred))
      return failOn(x, ErrorCode::InvalidArgument,
                    fmt::format("reshape: {} is not a shape (sizes >= 0 and at most one -1) for {}",
                                ir::sizesStr(sizes), x.str()),
                    loc);
    if (minusOne)
      inferred = i;
    else if (auto next = ir::multiply(known, sizes[i]))
      known = *next;
    else
      return failOn(x, next.error().code(), "reshape: " + next.error().message(), loc);
  }
  if (inferred) {
    std::optional<ir::SizeExpr> quotient = inferredSize(total, known);
    if (!quotient)
      return failOn(x, ErrorCode::ShapeMismatch,
                    fmt::format("reshape: cannot infer the -1 in {}: {} has {} elements, not a "
                                "multiple of {} for every value of its symbols",
                                ir::sizesStr(sizes), x.str(), total.str(), known.str()),
                    loc);
    sizes[*inferred] = *quotient;
  }
  return reshapeToSizes(x, std::move(sizes), loc);
}

namespace {

/// reshape of a symbolic operand: reshapeSizes with static target sizes.
Tensor reshapeSymbolic(Tensor x, const std::vector<int64_t> &shape, std::source_location loc) {
  return reshapeSizes(x, std::vector<ir::SizeExpr>(shape.begin(), shape.end()), loc);
}

} // namespace

Tensor reshape(Tensor x, std::vector<int64_t> shape, std::source_location loc) {
  if (x.ok() && x.type().isSymbolic())
    return reshapeSymbolic(x, shape, loc);
  if (!x.ok())
    return buildOp(OpKind::Reshape, {x}, {{"shape", shape}}, loc);
  std::optional<size_t> inferred;
  // The product of the other sizes: 0 if one is 0, else their product while
  // it stays <= 2^53 (checked: sizes come from the user).
  int64_t known = 1;
  bool knownHasZero = false;
  bool knownTooLarge = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred)
        return failOn(x, ErrorCode::InvalidArgument,
                      fmt::format("reshape: at most one -1 is allowed, got {} for {}",
                                  ir::shapeStr(shape), x.str()),
                      loc);
      inferred = i;
    } else if (shape[i] < 0) {
      return failOn(x, ErrorCode::InvalidArgument,
                    fmt::format("reshape: size {} in {} is negative (only -1, meaning "
                                "\"inferred\", is allowed)",
                                shape[i], ir::shapeStr(shape)),
                    loc);
    } else if (shape[i] == 0) {
      knownHasZero = true;
    } else if (!knownTooLarge &&
               (__builtin_mul_overflow(known, shape[i], &known) || known > ir::kMaxElements)) {
      knownTooLarge = true;
    }
  }
  if (knownHasZero)
    known = 0;
  if (inferred) {
    int64_t total = x.numElements();
    if (knownTooLarge && !knownHasZero)
      return failOn(x, ErrorCode::ShapeMismatch,
                    fmt::format("reshape: cannot infer the -1 in {}: the other sizes multiply to "
                                "more than 2^53, and {} has {} elements",
                                ir::shapeStr(shape), x.str(), total),
                    loc);
    if (known == 0 || total % known != 0)
      return failOn(x, ErrorCode::ShapeMismatch,
                    fmt::format("reshape: cannot infer the -1 in {}: {} has {} elements, not a "
                                "multiple of {}",
                                ir::shapeStr(shape), x.str(), total, known),
                    loc);
    shape[*inferred] = total / known;
  }
  return buildOp(OpKind::Reshape, {x}, {{"shape", std::move(shape)}}, loc);
}

Tensor flatten(Tensor x, int64_t startAxis, std::source_location loc) {
  if (!x.ok())
    return x;
  int64_t rank = x.rank();
  int64_t start = startAxis < 0 ? startAxis + rank : startAxis;
  if (start < 0 || start >= rank)
    return failOn(x, ErrorCode::InvalidArgument,
                  fmt::format("flatten: start axis {} is out of range for {}", startAxis, x.str()),
                  loc);
  if (x.type().isSymbolic()) {
    std::vector<ir::SizeExpr> sizes = x.type().sizes();
    ir::SizeExpr rest(1);
    for (int64_t axis = start; axis < rank; ++axis)
      if (auto next = ir::multiply(rest, sizes[axis]))
        rest = *next;
      else
        return failOn(x, next.error().code(), "flatten: " + next.error().message(), loc);
    sizes.resize(static_cast<size_t>(start));
    sizes.push_back(rest);
    return reshapeToSizes(x, std::move(sizes), loc);
  }
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + start);
  int64_t rest = 1;
  for (int64_t axis = start; axis < rank; ++axis)
    rest *= x.dim(axis);
  shape.push_back(rest);
  return reshape(x, std::move(shape), loc);
}

Tensor transpose(Tensor x, std::vector<int64_t> perm, std::source_location loc) {
  return buildOp(OpKind::Transpose, {x}, {{"perm", std::move(perm)}}, loc);
}

Tensor broadcastTo(Tensor x, std::vector<int64_t> shape, std::source_location loc) {
  return buildOp(OpKind::BroadcastTo, {x}, {{"shape", std::move(shape)}}, loc);
}

Tensor slice(Tensor x, std::vector<int64_t> starts, std::vector<int64_t> stops,
             std::vector<int64_t> steps, std::source_location loc) {
  if (steps.empty())
    steps.assign(starts.size(), 1);
  return buildOp(
      OpKind::Slice, {x},
      {{"starts", std::move(starts)}, {"stops", std::move(stops)}, {"steps", std::move(steps)}},
      loc);
}

Tensor sliceAxis(Tensor x, int64_t axis, int64_t start, int64_t stop, int64_t step,
                 std::source_location loc) {
  if (!x.ok())
    return x;
  int64_t rank = x.rank();
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank)
    return failOn(x, ErrorCode::InvalidArgument,
                  fmt::format("slice: axis {} is out of range for {}", axis, x.str()), loc);
  std::vector<int64_t> starts(static_cast<size_t>(rank), 0);
  std::vector<int64_t> stops = x.shape();
  std::vector<int64_t> steps(static_cast<size_t>(rank), 1);
  starts[normalized] = start;
  stops[normalized] = stop;
  steps[normalized] = step;
  return slice(x, std::move(starts), std::move(stops), std::move(steps), loc);
}

Tensor concat(std::span<const Tensor> xs, int64_t axis, std::source_location loc) {
  return buildOp(OpKind::Concat, std::vector<Tensor>(xs.begin(), xs.end()), {{"axis", axis}}, loc);
}

Tensor concat(std::initializer_list<Tensor> xs, int64_t axis, std::source_location loc) {
  return buildOp(OpKind::Concat, std::vector<Tensor>(xs), {{"axis", axis}}, loc);
}

Tensor pad(Tensor x, std::vector<int64_t> low, std::vector<int64_t> high, double value,
           std::source_location loc) {
  return buildOp(OpKind::Pad, {x},
                 {{"low", std::move(low)}, {"high", std::move(high)}, {"value", value}}, loc);
}

Tensor gather(Tensor data, Tensor indices, int64_t axis, std::source_location loc) {
  return buildOp(OpKind::Gather, {data, indices}, {{"axis", axis}}, loc);
}

Tensor takeAlongAxis(Tensor data, Tensor indices, int64_t axis, std::source_location loc) {
  return buildOp(OpKind::TakeAlongAxis, {data, indices}, {{"axis", axis}}, loc);
}

Tensor squeeze(Tensor x, std::vector<int64_t> axes, std::source_location loc) {
  return buildOp(OpKind::Squeeze, {x}, {{"axes", std::move(axes)}}, loc);
}

Tensor unsqueeze(Tensor x, std::vector<int64_t> axes, std::source_location loc) {
  return buildOp(OpKind::Unsqueeze, {x}, {{"axes", std::move(axes)}}, loc);
}

Tensor iota(Graph &graph, Shape shape, int64_t axis, DType dtype, std::source_location loc) {
  return graph.apply(OpKind::Iota, {},
                     {{"shape", std::move(shape)}, {"axis", axis}, {"dtype", dtype}}, loc);
}

Tensor sizeOf(Tensor x, std::vector<int64_t> axes, DType dtype, std::source_location loc) {
  if (!x.ok())
    return x;
  for (int64_t &axis : axes) {
    std::optional<int64_t> normalized = ir::normalizeAxis(axis, x.rank());
    if (!normalized)
      return detail::failOn(x, ErrorCode::InvalidArgument,
                            fmt::format("sizeOf: axis {} is out of range for {}", axis, x.str()),
                            loc);
    axis = *normalized;
  }
  Expected<ir::SizeExpr> size = ir::sizeOverAxes(x.type(), axes);
  if (!size)
    return detail::failOn(x, ErrorCode::InvalidArgument,
                          fmt::format("sizeOf: {}", size.error().message()), loc);
  if (size->isConstant())
    return constant(*x.graph(), static_cast<double>(size->constant()), {}, dtype, loc);
  return x.graph()->apply(ir::OpKind::SymbolSize, {},
                          {{"dtype", dtype}, {"size", std::vector<ir::SizeExpr>{*size}}}, loc);
}

Tensor constant(Graph &graph, const HostTensor &value, std::source_location loc) {
  return graph.apply(
      OpKind::Constant, {},
      {{"shape", value.shape()}, {"dtype", value.dtype()}, {"value", value.toDoubles()}}, loc);
}

Tensor constant(Graph &graph, double value, Shape shape, DType dtype, std::source_location loc) {
  if (!isFloatingPoint(dtype) && roundToDType(value, dtype) != value)
    return graph.fail(Error(ErrorCode::TypeMismatch,
                            fmt::format("constant: {} is not exactly representable in {}", value,
                                        dtypeName(dtype))),
                      loc);
  return graph.apply(
      OpKind::Constant, {},
      {{"shape", std::move(shape)}, {"dtype", dtype}, {"value", std::vector<double>{value}}}, loc);
}

} // namespace kiln
