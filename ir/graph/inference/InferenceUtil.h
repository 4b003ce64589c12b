// Shared helpers for the shape inference functions: error construction and
// common checks. Private to ir/graph/inference.
#pragma once

#include "ir/graph/ShapeInference.h"

#include <fmt/format.h>

namespace kiln::ir::inference {

/// An error starting with the op's name.
template <typename... Args>
std::unexpected<Error> fail(const InferContext &context, ErrorCode code,
                            fmt::format_string<Args...> format, Args &&...args) {
  return makeError(code, std::string(opName(context.kind)) + ": " +
                             fmt::format(format, std::forward<Args>(args)...));
}

inline const TensorType &operand(const InferContext &context, size_t index) {
  return context.operands[index];
}

/// Fails unless every operand has the same dtype as operand 0.
Expected<void> requireSameDType(const InferContext &context);
/// The same for the first `count` operands only (the rest are checked by the caller).
Expected<void> requireSameDType(const InferContext &context, size_t count);
/// Fails unless `type` is a floating-point dtype.
Expected<void> requireFloat(const InferContext &context, size_t operandIndex);
/// Fails unless `type` is numeric (float or integer, not bool).
Expected<void> requireNumeric(const InferContext &context, size_t operandIndex);
/// Fails unless the operand has exactly `rank` dims.
Expected<void> requireRank(const InferContext &context, size_t operandIndex, int64_t rank,
                           std::string_view what);
/// Normalizes an axis attribute against `rank` or fails naming the attribute.
Expected<int64_t> axisAttr(const InferContext &context, std::string_view name, int64_t rank);
/// Validates a list of distinct axes against `rank`, returning them normalized and sorted.
Expected<std::vector<int64_t>> axesAttr(const InferContext &context, std::string_view name,
                                        int64_t rank);
/// Fails unless the ints attribute has exactly `count` entries, each in
/// [minValue, kMaxElements].
Expected<void> requireInts(const InferContext &context, std::string_view name, size_t count,
                           int64_t minValue);
// ---- Symbolic sizes (docs/dynamic-shapes.md) ----

/// NumPy broadcast of symbolic sizes: two sizes combine when they are equal
/// expressions or one is the constant 1; nullopt otherwise.
std::optional<std::vector<SizeExpr>> broadcastSizes(const std::vector<SizeExpr> &a,
                                                    const std::vector<SizeExpr> &b);
/// makeTensorType with the op's name on an error.
Expected<TensorType> resultType(const InferContext &context, DType dtype,
                                std::vector<SizeExpr> sizes);
/// Fails unless `axis` of the operand is a static size; the error names the
/// op, the operand, the axis and the symbol.
Expected<void> requireStaticAxis(const InferContext &context, size_t operandIndex, int64_t axis,
                                 std::string_view what);
/// Fails unless size >= needed for every value of its symbols, checked at the
/// size's least value; the error names the symbols' values that break it.
Expected<void> requireAtLeast(const InferContext &context, const SizeExpr &size, int64_t needed,
                              std::string_view what);
/// An operand's size as text for errors: "784" or "N (in [1, 256])".
std::string describeSize(const SizeExpr &size);

/// Fails unless the string attribute `layout` is "nchw" or "nhwc"; returns whether nhwc.
Expected<bool> layoutIsNhwc(const InferContext &context);

} // namespace kiln::ir::inference
