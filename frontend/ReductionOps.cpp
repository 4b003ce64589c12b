// The DSL's reductions, softmax and normalization op functions.
#include "frontend/OpBuilder.h"
#include "frontend/Ops.h"

namespace kiln {

using detail::buildOp;
using ir::OpKind;

namespace {

Tensor reduce(OpKind kind, Tensor x, std::vector<int64_t> axes, bool keepdims,
              const std::source_location &loc) {
  return buildOp(kind, {x}, {{"axes", std::move(axes)}, {"keepdims", keepdims}}, loc);
}

} // namespace

Tensor reduceSum(Tensor x, std::vector<int64_t> axes, bool keepdims, std::source_location loc) {
  return reduce(OpKind::ReduceSum, x, std::move(axes), keepdims, loc);
}
Tensor reduceMean(Tensor x, std::vector<int64_t> axes, bool keepdims, std::source_location loc) {
  return reduce(OpKind::ReduceMean, x, std::move(axes), keepdims, loc);
}
Tensor reduceMax(Tensor x, std::vector<int64_t> axes, bool keepdims, std::source_location loc) {
  return reduce(OpKind::ReduceMax, x, std::move(axes), keepdims, loc);
}
Tensor reduceMin(Tensor x, std::vector<int64_t> axes, bool keepdims, std::source_location loc) {
  return reduce(OpKind::ReduceMin, x, std::move(axes), keepdims, loc);
}
Tensor reduceProd(Tensor x, std::vector<int64_t> axes, bool keepdims, std::source_location loc) {
  return reduce(OpKind::ReduceProd, x, std::move(axes), keepdims, loc);
}

Tensor argmax(Tensor x, int64_t axis, bool keepdims, std::source_location loc) {
  return buildOp(OpKind::ArgMax, {x}, {{"axis", axis}, {"keepdims", keepdims}}, loc);
}
Tensor argmin(Tensor x, int64_t axis, bool keepdims, std::source_location loc) {
  return buildOp(OpKind::ArgMin, {x}, {{"axis", axis}, {"keepdims", keepdims}}, loc);
}

Tensor softmax(Tensor x, int64_t axis, std::source_location loc) {
  return buildOp(OpKind::Softmax, {x}, {{"axis", axis}}, loc);
}
Tensor logSoftmax(Tensor x, int64_t axis, std::source_location loc) {
  return buildOp(OpKind::LogSoftmax, {x}, {{"axis", axis}}, loc);
}

Tensor layerNorm(Tensor x, Tensor scale, Tensor bias, int64_t axis, double epsilon,
                 std::source_location loc) {
  return buildOp(OpKind::LayerNorm, {x, scale, bias}, {{"axis", axis}, {"epsilon", epsilon}}, loc);
}

Tensor batchNorm(Tensor x, Tensor scale, Tensor bias, Tensor mean, Tensor var, int64_t axis,
                 double epsilon, std::source_location loc) {
  return buildOp(OpKind::BatchNorm, {x, scale, bias, mean, var},
                 {{"axis", axis}, {"epsilon", epsilon}}, loc);
}

} // namespace kiln
