// Shape and dtype inference for collectives: the result is the operand's type.
#include "ir/graph/inference/InferenceUtil.h"

namespace kiln::ir {

using namespace inference;

Expected<TensorType> inferAllReduce(const InferContext &context) {
  KILN_TRY_VOID(requireNumeric(context, 0));
  const std::string &op = getString(context.attrs, "op");
  if (op != "sum" && op != "mean")
    return fail(context, ErrorCode::InvalidArgument, "op must be \"sum\" or \"mean\", got \"{}\"",
                op);
  if (op == "mean" && !isFloatingPoint(operand(context, 0).dtype))
    return fail(context, ErrorCode::TypeMismatch, "op \"mean\" needs a floating-point operand, got {}",
                dtypeName(operand(context, 0).dtype));
  return operand(context, 0);
}

} // namespace kiln::ir
