// Shape inference for the row kernels: softmax, log_softmax, layer_norm and
// inference batch_norm.
#include "ir/graph/inference/InferenceUtil.h"

namespace kiln::ir {

using namespace inference;

namespace {

Expected<void> checkEpsilon(const InferContext &context) {
  double epsilon = getFloat(context.attrs, "epsilon");
  if (!(epsilon >= 0.0))
    return fail(context, ErrorCode::InvalidArgument, "epsilon must be >= 0, got {}", epsilon);
  return {};
}

} // namespace

Expected<TensorType> inferSoftmax(const InferContext &context) {
  KILN_TRY_VOID(requireFloat(context, 0));
  const TensorType &input = operand(context, 0);
  KILN_TRY(int64_t axis, axisAttr(context, "axis", input.rank()));
  (void)axis; // An empty axis is fine: the result is empty too.
  return input;
}

Expected<TensorType> inferLayerNorm(const InferContext &context) {
  KILN_TRY_VOID(requireSameDType(context));
  KILN_TRY_VOID(requireFloat(context, 0));
  KILN_TRY_VOID(checkEpsilon(context));
  const TensorType &input = operand(context, 0);
  KILN_TRY(int64_t axis, axisAttr(context, "axis", input.rank()));
  std::vector<SizeExpr> sizes = input.sizes();
  std::vector<SizeExpr> normalized(sizes.begin() + axis, sizes.end());
  for (size_t i = 1; i < 3; ++i)
    if (operand(context, i).sizes() != normalized)
      return fail(context, ErrorCode::ShapeMismatch, "{} must have shape {} (x[{}:]), got {}",
                  i == 1 ? "scale" : "bias", sizesStr(normalized), axis,
                  sizesStr(operand(context, i).sizes()));
  return input;
}

Expected<TensorType> inferBatchNorm(const InferContext &context) {
  KILN_TRY_VOID(requireSameDType(context));
  KILN_TRY_VOID(requireFloat(context, 0));
  KILN_TRY_VOID(checkEpsilon(context));
  const TensorType &input = operand(context, 0);
  KILN_TRY(int64_t axis, axisAttr(context, "axis", input.rank()));
  static constexpr const char *kNames[] = {"x", "scale", "bias", "mean", "var"};
  std::vector<SizeExpr> channels{input.size(axis)};
  for (size_t i = 1; i < 5; ++i)
    if (operand(context, i).sizes() != channels)
      return fail(context, ErrorCode::ShapeMismatch,
                  "{} must have shape {} (the channel axis {} of x {}), got {}", kNames[i],
                  sizesStr(channels), axis, input.str(), sizesStr(operand(context, i).sizes()));
  return input;
}

} // namespace kiln::ir
