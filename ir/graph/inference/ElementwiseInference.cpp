// Shape and dtype inference for elementwise ops: NumPy broadcasting, and the
// dtype rules (no implicit promotion: mixed dtypes need an explicit cast).
#include "ir/graph/inference/InferenceUtil.h"

#include <cmath>

namespace kiln::ir {

using namespace inference;

namespace {

// Symbolic sizes broadcast when equal or 1 (InferenceUtil.h): N against 256
// fails even when 256 is N's upper bound.
Expected<std::vector<SizeExpr>> broadcastOperands(const InferContext &context) {
  std::vector<SizeExpr> shape = operand(context, 0).sizes();
  for (size_t i = 1; i < context.operands.size(); ++i) {
    auto next = broadcastSizes(shape, operand(context, i).sizes());
    if (!next) {
      std::string shapes;
      for (const TensorType &type : context.operands)
        shapes += (shapes.empty() ? "" : " and ") + type.str();
      return fail(context, ErrorCode::ShapeMismatch, "cannot broadcast {}", shapes);
    }
    shape = *next;
  }
  return shape;
}

} // namespace

Expected<TensorType> inferUnaryNumeric(const InferContext &context) {
  KILN_TRY_VOID(requireNumeric(context, 0));
  if (context.kind == OpKind::Clamp) {
    double low = getFloat(context.attrs, "min"), high = getFloat(context.attrs, "max");
    if (std::isnan(low) || std::isnan(high))
      return fail(context, ErrorCode::InvalidArgument, "bounds must not be NaN, got min {} max {}",
                  low, high);
    if (low > high)
      return fail(context, ErrorCode::InvalidArgument, "min {} is greater than max {}", low, high);
  }
  return operand(context, 0);
}

Expected<TensorType> inferUnaryFloat(const InferContext &context) {
  KILN_TRY_VOID(requireFloat(context, 0));
  return operand(context, 0);
}

Expected<TensorType> inferUnaryBool(const InferContext &context) {
  if (!isBool(operand(context, 0).dtype))
    return fail(context, ErrorCode::TypeMismatch, "operand must be bool, got {}",
                dtypeName(operand(context, 0).dtype));
  return operand(context, 0);
}

Expected<TensorType> inferGelu(const InferContext &context) {
  const std::string &approximate = getString(context.attrs, "approximate");
  if (approximate != "none" && approximate != "tanh")
    return fail(context, ErrorCode::InvalidArgument,
                "approximate must be \"none\" or \"tanh\", got \"{}\"", approximate);
  return inferUnaryFloat(context);
}

Expected<TensorType> inferCast(const InferContext &context) {
  TensorType type = operand(context, 0);
  type.dtype = getType(context.attrs, "dtype");
  return type;
}

Expected<TensorType> inferBinaryNumeric(const InferContext &context) {
  KILN_TRY_VOID(requireSameDType(context));
  KILN_TRY_VOID(requireNumeric(context, 0));
  KILN_TRY(std::vector<SizeExpr> shape, broadcastOperands(context));
  return resultType(context, operand(context, 0).dtype, std::move(shape));
}

Expected<TensorType> inferBinaryFloat(const InferContext &context) {
  KILN_TRY_VOID(requireSameDType(context));
  KILN_TRY_VOID(requireFloat(context, 0));
  KILN_TRY(std::vector<SizeExpr> shape, broadcastOperands(context));
  return resultType(context, operand(context, 0).dtype, std::move(shape));
}

Expected<TensorType> inferBinaryBool(const InferContext &context) {
  for (size_t i = 0; i < 2; ++i)
    if (!isBool(operand(context, i).dtype))
      return fail(context, ErrorCode::TypeMismatch, "operands must be bool, got {} and {}",
                  dtypeName(operand(context, 0).dtype), dtypeName(operand(context, 1).dtype));
  KILN_TRY(std::vector<SizeExpr> shape, broadcastOperands(context));
  return resultType(context, DType::Bool, std::move(shape));
}

Expected<TensorType> inferCompare(const InferContext &context) {
  KILN_TRY_VOID(requireSameDType(context));
  KILN_TRY(std::vector<SizeExpr> shape, broadcastOperands(context));
  return resultType(context, DType::Bool, std::move(shape));
}

Expected<TensorType> inferWhere(const InferContext &context) {
  if (!isBool(operand(context, 0).dtype))
    return fail(context, ErrorCode::TypeMismatch, "condition must be bool, got {}",
                dtypeName(operand(context, 0).dtype));
  if (operand(context, 1).dtype != operand(context, 2).dtype)
    return fail(context, ErrorCode::TypeMismatch,
                "both branches must have the same dtype, got {} and {}",
                dtypeName(operand(context, 1).dtype), dtypeName(operand(context, 2).dtype));
  KILN_TRY(std::vector<SizeExpr> shape, broadcastOperands(context));
  return resultType(context, operand(context, 1).dtype, std::move(shape));
}

} // namespace kiln::ir
