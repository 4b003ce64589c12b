// The DSL's elementwise op functions (unary, binary, where) and scalarLike.
#include "frontend/OpBuilder.h"
#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln {

using detail::buildOp;
using ir::OpKind;

namespace {

Tensor unary(OpKind kind, Tensor x, const std::source_location &loc, ir::AttrMap attrs = {}) {
  return buildOp(kind, {x}, std::move(attrs), loc);
}

Tensor binary(OpKind kind, Tensor a, Tensor b, const std::source_location &loc) {
  return buildOp(kind, {a, b}, {}, loc);
}

} // namespace

Tensor neg(Tensor x, std::source_location loc) { return unary(OpKind::Neg, x, loc); }
Tensor abs(Tensor x, std::source_location loc) { return unary(OpKind::Abs, x, loc); }
Tensor exp(Tensor x, std::source_location loc) { return unary(OpKind::Exp, x, loc); }
Tensor log(Tensor x, std::source_location loc) { return unary(OpKind::Log, x, loc); }
Tensor sqrt(Tensor x, std::source_location loc) { return unary(OpKind::Sqrt, x, loc); }
Tensor rsqrt(Tensor x, std::source_location loc) { return unary(OpKind::Rsqrt, x, loc); }
Tensor tanh(Tensor x, std::source_location loc) { return unary(OpKind::Tanh, x, loc); }
Tensor sigmoid(Tensor x, std::source_location loc) { return unary(OpKind::Sigmoid, x, loc); }
Tensor relu(Tensor x, std::source_location loc) { return unary(OpKind::Relu, x, loc); }
Tensor silu(Tensor x, std::source_location loc) { return unary(OpKind::Silu, x, loc); }
Tensor erf(Tensor x, std::source_location loc) { return unary(OpKind::Erf, x, loc); }
Tensor sin(Tensor x, std::source_location loc) { return unary(OpKind::Sin, x, loc); }
Tensor cos(Tensor x, std::source_location loc) { return unary(OpKind::Cos, x, loc); }
Tensor logicalNot(Tensor x, std::source_location loc) { return unary(OpKind::Not, x, loc); }

Tensor gelu(Tensor x, GeluApproximation approximate, std::source_location loc) {
  return unary(
      OpKind::Gelu, x, loc,
      {{"approximate", std::string(approximate == GeluApproximation::Tanh ? "tanh" : "none")}});
}

Tensor cast(Tensor x, DType dtype, std::source_location loc) {
  return unary(OpKind::Cast, x, loc, {{"dtype", dtype}});
}

Tensor clamp(Tensor x, double min, double max, std::source_location loc) {
  return unary(OpKind::Clamp, x, loc, {{"min", min}, {"max", max}});
}

Tensor add(Tensor a, Tensor b, std::source_location loc) { return binary(OpKind::Add, a, b, loc); }
Tensor sub(Tensor a, Tensor b, std::source_location loc) { return binary(OpKind::Sub, a, b, loc); }
Tensor mul(Tensor a, Tensor b, std::source_location loc) { return binary(OpKind::Mul, a, b, loc); }
Tensor div(Tensor a, Tensor b, std::source_location loc) { return binary(OpKind::Div, a, b, loc); }
Tensor pow(Tensor a, Tensor b, std::source_location loc) { return binary(OpKind::Pow, a, b, loc); }
Tensor maximum(Tensor a, Tensor b, std::source_location loc) {
  return binary(OpKind::Max, a, b, loc);
}
Tensor minimum(Tensor a, Tensor b, std::source_location loc) {
  return binary(OpKind::Min, a, b, loc);
}
Tensor eq(Tensor a, Tensor b, std::source_location loc) { return binary(OpKind::Eq, a, b, loc); }
Tensor ne(Tensor a, Tensor b, std::source_location loc) { return binary(OpKind::Ne, a, b, loc); }
Tensor lt(Tensor a, Tensor b, std::source_location loc) { return binary(OpKind::Lt, a, b, loc); }
Tensor le(Tensor a, Tensor b, std::source_location loc) { return binary(OpKind::Le, a, b, loc); }
Tensor gt(Tensor a, Tensor b, std::source_location loc) { return binary(OpKind::Gt, a, b, loc); }
Tensor ge(Tensor a, Tensor b, std::source_location loc) { return binary(OpKind::Ge, a, b, loc); }
Tensor logicalAnd(Tensor a, Tensor b, std::source_location loc) {
  return binary(OpKind::And, a, b, loc);
}
Tensor logicalOr(Tensor a, Tensor b, std::source_location loc) {
  return binary(OpKind::Or, a, b, loc);
}

Tensor pow(Tensor a, double exponent, std::source_location loc) {
  return pow(a, scalarLike(a, exponent, loc), loc);
}
Tensor maximum(Tensor a, double b, std::source_location loc) {
  return maximum(a, scalarLike(a, b, loc), loc);
}
Tensor minimum(Tensor a, double b, std::source_location loc) {
  return minimum(a, scalarLike(a, b, loc), loc);
}
Tensor eq(Tensor a, double b, std::source_location loc) {
  return eq(a, scalarLike(a, b, loc), loc);
}
Tensor ne(Tensor a, double b, std::source_location loc) {
  return ne(a, scalarLike(a, b, loc), loc);
}

Tensor where(Tensor cond, Tensor a, Tensor b, std::source_location loc) {
  return buildOp(OpKind::Where, {cond, a, b}, {}, loc);
}

Tensor scalarLike(Tensor like, double value, std::source_location loc) {
  if (!like.ok())
    return like;
  DType dtype = like.dtype();
  if (!isFloatingPoint(dtype) && roundToDType(value, dtype) != value)
    return detail::failOn(like, ErrorCode::TypeMismatch,
                          fmt::format("scalar {} is not exactly representable in {}, the dtype "
                                      "of the tensor it is combined with ({}); cast the tensor "
                                      "first",
                                      value, dtypeName(dtype), like.str()),
                          loc);
  return constant(*like.graph(), value, {}, dtype, loc);
}

} // namespace kiln
