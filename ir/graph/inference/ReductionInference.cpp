// Shape inference for reductions over axes and arg-reductions along one axis.
#include "ir/graph/inference/InferenceUtil.h"

#include <algorithm>

namespace kiln::ir {

using namespace inference;

namespace {

std::vector<SizeExpr> reducedShape(const std::vector<SizeExpr> &shape,
                                   const std::vector<int64_t> &axes, bool keepDims) {
  std::vector<SizeExpr> out;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced)
      out.push_back(shape[i]);
    else if (keepDims)
      out.push_back(SizeExpr(1));
  }
  return out;
}

} // namespace

Expected<TensorType> inferReduce(const InferContext &context) {
  const TensorType &input = operand(context, 0);
  KILN_TRY_VOID(requireNumeric(context, 0));
  KILN_TRY(auto axes, axesAttr(context, "axes", input.rank()));
  if (axes.empty())
    return fail(context, ErrorCode::InvalidArgument,
                "axes is empty; list the axes to reduce (all of them for a full reduction)");
  if (context.kind == OpKind::ReduceMax || context.kind == OpKind::ReduceMin)
    for (int64_t axis : axes)
      KILN_TRY_VOID(requireAtLeast(context, input.size(axis), 1,
                                   fmt::format("cannot reduce empty axis {} of {}", axis,
                                               input.str())));
  return resultType(context, input.dtype,
                    reducedShape(input.sizes(), axes, getBool(context.attrs, "keepdims")));
}

Expected<TensorType> inferReduceFloat(const InferContext &context) {
  KILN_TRY_VOID(requireFloat(context, 0));
  return inferReduce(context);
}

Expected<TensorType> inferArgReduce(const InferContext &context) {
  const TensorType &input = operand(context, 0);
  KILN_TRY_VOID(requireNumeric(context, 0));
  KILN_TRY(int64_t axis, axisAttr(context, "axis", input.rank()));
  KILN_TRY_VOID(requireAtLeast(context, input.size(axis), 1,
                               fmt::format("cannot search empty axis {} of {}", axis, input.str())));
  return resultType(context, DType::I64,
                    reducedShape(input.sizes(), {axis}, getBool(context.attrs, "keepdims")));
}

} // namespace kiln::ir
