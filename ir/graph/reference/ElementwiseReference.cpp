// Reference implementations of every elementwise op (unary, binary with NumPy
// broadcasting, where, cast), computed in fp64; integer add/sub/mul/div compute
// in 64-bit wrapping arithmetic so the interpreter's wrap to the dtype is exact,
// and float -> integer casts saturate as GPU conversions do.
#include "ir/graph/Reference.h"
#include "ir/graph/reference/IndexMath.h"
#include "ir/graph/reference/IntegerArithmetic.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <numbers>

namespace kiln::ir {
namespace {

using reference::broadcastStrides;
using reference::divideTruncating;
using reference::fromWrapping;
using reference::StridedWalker;
using reference::toWrapping;

template <typename F> std::vector<double> mapUnary(const RefTensor &x, F f) {
  std::vector<double> out(x.data.size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = f(x.data[i]);
  return out;
}

template <typename F>
std::vector<double> mapBinary(const RefTensor &a, const RefTensor &b, const Shape &result, F f) {
  std::vector<double> out(static_cast<size_t>(TensorType{.shape = result}.numElements()));
  if (a.type.shape == result && b.type.shape == result) {
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = f(a.data[i], b.data[i]);
    return out;
  }
  StridedWalker<2> walker(
      result, {broadcastStrides(a.type.shape, result), broadcastStrides(b.type.shape, result)});
  for (double &value : out) {
    value = f(a.data[static_cast<size_t>(walker.offset(0))],
              b.data[static_cast<size_t>(walker.offset(1))]);
    walker.next();
  }
  return out;
}

std::vector<double> selectWhere(const RefTensor &cond, const RefTensor &a, const RefTensor &b,
                                const Shape &result) {
  std::vector<double> out(static_cast<size_t>(TensorType{.shape = result}.numElements()));
  StridedWalker<3> walker(result, {broadcastStrides(cond.type.shape, result),
                                   broadcastStrides(a.type.shape, result),
                                   broadcastStrides(b.type.shape, result)});
  for (double &value : out) {
    bool pick = cond.data[static_cast<size_t>(walker.offset(0))] != 0.0;
    value = pick ? a.data[static_cast<size_t>(walker.offset(1))]
                 : b.data[static_cast<size_t>(walker.offset(2))];
    walker.next();
  }
  return out;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double geluErf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }

double geluTanh(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// NaN propagates through max and min (IEEE maxNum would drop it, hiding bugs).
double maxPropagatingNaN(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return a > b ? a : b;
}

double minPropagatingNaN(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return a < b ? a : b;
}

/// cast: float -> integer saturates (NaN -> 0, +-inf -> min/max), as the
/// GPU's cvt.rzi.sN.fM does; every other conversion is the interpreter's
/// rounding to the result dtype — so int -> int and bool -> int wrap (cvt
/// without .sat), and float -> float rounds to nearest even (fp8 satfinite).
std::vector<double> cast(const RefTensor &x, DType target) {
  if (isFloatingPoint(x.type.dtype) && isInteger(target))
    return mapUnary(x, [target](double v) { return convertFloatToInteger(v, target); });
  return x.data;
}

Expected<std::vector<double>> unary(const ReferenceContext &context) {
  const RefTensor &x = *context.operands[0];
  switch (context.kind) {
  case OpKind::Neg: return mapUnary(x, [](double v) { return -v; });
  case OpKind::Abs: return mapUnary(x, [](double v) { return std::fabs(v); });
  case OpKind::Exp: return mapUnary(x, [](double v) { return std::exp(v); });
  case OpKind::Log: return mapUnary(x, [](double v) { return std::log(v); });
  case OpKind::Sqrt: return mapUnary(x, [](double v) { return std::sqrt(v); });
  case OpKind::Rsqrt: return mapUnary(x, [](double v) { return 1.0 / std::sqrt(v); });
  case OpKind::Tanh: return mapUnary(x, [](double v) { return std::tanh(v); });
  case OpKind::Sigmoid: return mapUnary(x, sigmoid);
  case OpKind::Relu: return mapUnary(x, [](double v) { return maxPropagatingNaN(v, 0.0); });
  case OpKind::Gelu:
    if (getString(context.attrs, "approximate") == "tanh")
      return mapUnary(x, geluTanh);
    return mapUnary(x, geluErf);
  case OpKind::Silu: return mapUnary(x, [](double v) { return v * sigmoid(v); });
  case OpKind::Erf: return mapUnary(x, [](double v) { return std::erf(v); });
  case OpKind::Sin: return mapUnary(x, [](double v) { return std::sin(v); });
  case OpKind::Cos: return mapUnary(x, [](double v) { return std::cos(v); });
  case OpKind::Not: return mapUnary(x, [](double v) { return v == 0.0 ? 1.0 : 0.0; });
  case OpKind::Cast: return cast(x, context.resultType.dtype);
  case OpKind::Clamp: {
    double low = getFloat(context.attrs, "min");
    double high = getFloat(context.attrs, "max");
    return mapUnary(
        x, [low, high](double v) { return minPropagatingNaN(maxPropagatingNaN(v, low), high); });
  }
  default: break;
  }
  KILN_UNREACHABLE(fmt::format("{}: no elementwise reference", opName(context.kind)));
}

Expected<std::vector<double>> integerArithmetic(const ReferenceContext &context,
                                                const Shape &result) {
  const RefTensor &a = *context.operands[0];
  const RefTensor &b = *context.operands[1];
  DType dtype = context.resultType.dtype;
  switch (context.kind) {
  case OpKind::Add:
    return mapBinary(a, b, result, [dtype](double x, double y) {
      return fromWrapping(toWrapping(x) + toWrapping(y), dtype);
    });
  case OpKind::Sub:
    return mapBinary(a, b, result, [dtype](double x, double y) {
      return fromWrapping(toWrapping(x) - toWrapping(y), dtype);
    });
  case OpKind::Mul:
    return mapBinary(a, b, result, [dtype](double x, double y) {
      return fromWrapping(toWrapping(x) * toWrapping(y), dtype);
    });
  case OpKind::Div:
    return mapBinary(a, b, result, [](double x, double y) {
      return static_cast<double>(divideTruncating(static_cast<int64_t>(toWrapping(x)),
                                                  static_cast<int64_t>(toWrapping(y))));
    });
  default: break;
  }
  KILN_UNREACHABLE(fmt::format("{}: no integer reference", opName(context.kind)));
}

double boolean(bool value) { return value ? 1.0 : 0.0; }

Expected<std::vector<double>> binary(const ReferenceContext &context) {
  const RefTensor &a = *context.operands[0];
  const RefTensor &b = *context.operands[1];
  const Shape &result = context.resultType.shape;
  bool integerArith = isInteger(context.resultType.dtype);
  switch (context.kind) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
    if (integerArith)
      return integerArithmetic(context, result);
    break;
  default: break;
  }
  switch (context.kind) {
  case OpKind::Add: return mapBinary(a, b, result, [](double x, double y) { return x + y; });
  case OpKind::Sub: return mapBinary(a, b, result, [](double x, double y) { return x - y; });
  case OpKind::Mul: return mapBinary(a, b, result, [](double x, double y) { return x * y; });
  case OpKind::Div: return mapBinary(a, b, result, [](double x, double y) { return x / y; });
  case OpKind::Pow:
    return mapBinary(a, b, result, [](double x, double y) { return std::pow(x, y); });
  case OpKind::Max: return mapBinary(a, b, result, maxPropagatingNaN);
  case OpKind::Min: return mapBinary(a, b, result, minPropagatingNaN);
  case OpKind::Eq:
    return mapBinary(a, b, result, [](double x, double y) { return boolean(x == y); });
  case OpKind::Ne:
    return mapBinary(a, b, result, [](double x, double y) { return boolean(x != y); });
  case OpKind::Lt:
    return mapBinary(a, b, result, [](double x, double y) { return boolean(x < y); });
  case OpKind::Le:
    return mapBinary(a, b, result, [](double x, double y) { return boolean(x <= y); });
  case OpKind::Gt:
    return mapBinary(a, b, result, [](double x, double y) { return boolean(x > y); });
  case OpKind::Ge:
    return mapBinary(a, b, result, [](double x, double y) { return boolean(x >= y); });
  case OpKind::And:
    return mapBinary(a, b, result,
                     [](double x, double y) { return boolean(x != 0.0 && y != 0.0); });
  case OpKind::Or:
    return mapBinary(a, b, result,
                     [](double x, double y) { return boolean(x != 0.0 || y != 0.0); });
  default: break;
  }
  KILN_UNREACHABLE(fmt::format("{}: no elementwise reference", opName(context.kind)));
}

} // namespace

Expected<std::vector<double>> referenceElementwise(const ReferenceContext &context) {
  switch (context.operands.size()) {
  case 1: return unary(context);
  case 2: return binary(context);
  case 3:
    if (context.kind == OpKind::Where)
      return selectWhere(*context.operands[0], *context.operands[1], *context.operands[2],
                         context.resultType.shape);
    break;
  default: break;
  }
  KILN_UNREACHABLE(fmt::format("{}: no elementwise reference for {} operands", opName(context.kind),
                               context.operands.size()));
}

} // namespace kiln::ir
