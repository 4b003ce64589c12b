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
/// Fails unless the string attribute `layout` is "nchw" or "nhwc"; returns whether nhwc.
Expected<bool> layoutIsNhwc(const InferContext &context);

} // namespace kiln::ir::inference
