// Common checks used by every shape inference function.
#include "ir/graph/inference/InferenceUtil.h"

#include <algorithm>
#include <fmt/format.h>

namespace kiln::ir {

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

namespace inference {

std::optional<std::vector<SizeExpr>> broadcastSizes(const std::vector<SizeExpr> &a,
                                                    const std::vector<SizeExpr> &b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<SizeExpr> out(rank);
  const SizeExpr one(1);
  for (size_t i = 0; i < rank; ++i) {
    const SizeExpr &da = i < rank - a.size() ? one : a[i - (rank - a.size())];
    const SizeExpr &db = i < rank - b.size() ? one : b[i - (rank - b.size())];
    if (da == db || db == one)
      out[i] = da;
    else if (da == one)
      out[i] = db;
    else
      return std::nullopt;
  }
  return out;
}

Expected<TensorType> resultType(const InferContext &context, DType dtype,
                                std::vector<SizeExpr> sizes) {
  auto type = makeTensorType(dtype, std::move(sizes));
  if (!type)
    return fail(context, type.error().code(), "{}", type.error().message());
  return type;
}

std::string describeSize(const SizeExpr &size) {
  if (size.isConstant())
    return size.str();
  std::string ranges;
  for (const SizeSymbol &symbol : size.symbols())
    ranges += (ranges.empty() ? "" : ", ") + symbol.str();
  return size.str() + " (" + ranges + ")";
}

Expected<void> requireStaticAxis(const InferContext &context, size_t operandIndex, int64_t axis,
                                 std::string_view what) {
  const TensorType &type = operand(context, operandIndex);
  SizeExpr size = type.size(axis);
  if (size.isConstant())
    return {};
  return fail(context, ErrorCode::ShapeMismatch,
              "{} (axis {} of operand {} {}) is the symbolic size {}; it must be static",
              what, axis, operandIndex, type.str(), describeSize(size));
}

Expected<void> requireAtLeast(const InferContext &context, const SizeExpr &size, int64_t needed,
                              std::string_view what) {
  KILN_TRY(SizeInterval range, size.bounds());
  if (range.low >= needed)
    return {};
  if (size.isConstant())
    return fail(context, ErrorCode::ShapeMismatch, "{}", what);
  // The least value comes from the symbols' least values (shapes are monotone).
  std::string at;
  for (const SizeSymbol &symbol : size.symbols())
    at += fmt::format("{}{} = {} (of {})", at.empty() ? "" : ", ", symbol.name, symbol.min,
                      symbol.str());
  return fail(context, ErrorCode::ShapeMismatch, "{}: {} is {} < {} at {}", what, size.str(),
              range.low, needed, at);
}

Expected<void> requireSameDType(const InferContext &context) {
  return requireSameDType(context, context.operands.size());
}

Expected<void> requireSameDType(const InferContext &context, size_t count) {
  for (size_t i = 1; i < std::min(count, context.operands.size()); ++i)
    if (operand(context, i).dtype != operand(context, 0).dtype)
      return fail(context, ErrorCode::TypeMismatch,
                  "operands must have the same dtype, got {} and {} (insert a cast)",
                  dtypeName(operand(context, 0).dtype), dtypeName(operand(context, i).dtype));
  return {};
}

Expected<void> requireFloat(const InferContext &context, size_t operandIndex) {
  DType type = operand(context, operandIndex).dtype;
  if (!isFloatingPoint(type))
    return fail(context, ErrorCode::TypeMismatch, "operand {} must be floating point, got {}",
                operandIndex, dtypeName(type));
  return {};
}

Expected<void> requireNumeric(const InferContext &context, size_t operandIndex) {
  DType type = operand(context, operandIndex).dtype;
  if (type == DType::Bool)
    return fail(context, ErrorCode::TypeMismatch, "operand {} must be numeric, got bool",
                operandIndex);
  return {};
}

Expected<void> requireRank(const InferContext &context, size_t operandIndex, int64_t rank,
                           std::string_view what) {
  const TensorType &type = operand(context, operandIndex);
  if (type.rank() != rank)
    return fail(context, ErrorCode::ShapeMismatch, "{} must have rank {}, got {}", what, rank,
                type.str());
  return {};
}

Expected<int64_t> axisAttr(const InferContext &context, std::string_view name, int64_t rank) {
  int64_t axis = getInt(context.attrs, name);
  auto normalized = normalizeAxis(axis, rank);
  if (!normalized)
    return fail(context, ErrorCode::InvalidArgument, "{} {} is out of range for rank {}", name,
                axis, rank);
  return *normalized;
}

Expected<std::vector<int64_t>> axesAttr(const InferContext &context, std::string_view name,
                                        int64_t rank) {
  std::vector<int64_t> axes;
  for (int64_t axis : getInts(context.attrs, name)) {
    auto normalized = normalizeAxis(axis, rank);
    if (!normalized)
      return fail(context, ErrorCode::InvalidArgument, "{} entry {} is out of range for rank {}",
                  name, axis, rank);
    if (std::find(axes.begin(), axes.end(), *normalized) != axes.end())
      return fail(context, ErrorCode::InvalidArgument, "{} names axis {} twice", name,
                  *normalized);
    axes.push_back(*normalized);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

Expected<void> requireInts(const InferContext &context, std::string_view name, size_t count,
                           int64_t minValue) {
  const std::vector<int64_t> &values = getInts(context.attrs, name);
  if (values.size() != count)
    return fail(context, ErrorCode::InvalidArgument, "{} must have {} entries, got {}", name,
                count, values.size());
  for (int64_t value : values) {
    if (value < minValue)
      return fail(context, ErrorCode::InvalidArgument, "{} entries must be >= {}, got {}", name,
                  minValue, value);
    // Window and padding sizes beyond any tensor size are nonsense, and the cap
    // keeps every later product of two of them inside int64.
    if (value > kMaxElements)
      return fail(context, ErrorCode::InvalidArgument, "{} entries must be <= 2^53, got {}",
                  name, value);
  }
  return {};
}

Expected<bool> layoutIsNhwc(const InferContext &context) {
  const std::string &layout = getString(context.attrs, "layout");
  if (layout != "nchw" && layout != "nhwc")
    return fail(context, ErrorCode::InvalidArgument,
                "layout must be \"nchw\" or \"nhwc\", got \"{}\"", layout);
  return layout == "nhwc";
}

} // namespace inference
} // namespace kiln::ir
