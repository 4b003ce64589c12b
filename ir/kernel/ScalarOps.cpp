// One-lane semantics of kernel IR arithmetic, casts, intrinsics and element
// encodings, shared by the evaluator and constant folding.
#include "ir/kernel/ScalarOps.h"

#include "support/FloatConvert.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace kiln::kir {

namespace {

std::string_view binaryOpName(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add: return "add";
  case BinaryOp::Sub: return "sub";
  case BinaryOp::Mul: return "mul";
  case BinaryOp::Div: return "div";
  case BinaryOp::Mod: return "mod";
  case BinaryOp::Min: return "min";
  case BinaryOp::Max: return "max";
  case BinaryOp::Eq: return "eq";
  case BinaryOp::Ne: return "ne";
  case BinaryOp::Lt: return "lt";
  case BinaryOp::Le: return "le";
  case BinaryOp::Gt: return "gt";
  case BinaryOp::Ge: return "ge";
  case BinaryOp::And: return "and";
  case BinaryOp::Or: return "or";
  }
  KILN_UNREACHABLE("binary op");
}

std::unexpected<Error> undefinedOn(std::string_view what, DType dtype) {
  return makeError(ErrorCode::Unsupported,
                   fmt::format("{} is not defined on {}", what, dtypeName(dtype)));
}

Scalar boolScalar(bool value) { return Scalar::ofInt(value ? 1 : 0); }

/// The comparisons, shared by every dtype (NaN compares false except Ne).
template <typename T> std::optional<bool> compare(BinaryOp op, T a, T b) {
  switch (op) {
  case BinaryOp::Eq: return a == b;
  case BinaryOp::Ne: return a != b;
  case BinaryOp::Lt: return a < b;
  case BinaryOp::Le: return a <= b;
  case BinaryOp::Gt: return a > b;
  case BinaryOp::Ge: return a >= b;
  default: return std::nullopt;
  }
}

/// A float op computed in T (double for f64, float for every other float).
template <typename T> Scalar floatBinary(BinaryOp op, DType dtype, T a, T b) {
  if (auto cmp = compare(op, a, b))
    return boolScalar(*cmp);
  T result;
  switch (op) {
  case BinaryOp::Add: result = a + b; break;
  case BinaryOp::Sub: result = a - b; break;
  case BinaryOp::Mul: result = a * b; break;
  case BinaryOp::Div: result = a / b; break;
  case BinaryOp::Mod: result = std::fmod(a, b); break;
  case BinaryOp::Min:
    result = std::isnan(a) || std::isnan(b) ? std::numeric_limits<T>::quiet_NaN() : a < b ? a : b;
    break;
  case BinaryOp::Max:
    result = std::isnan(a) || std::isnan(b) ? std::numeric_limits<T>::quiet_NaN() : a > b ? a : b;
    break;
  default: KILN_UNREACHABLE("unchecked float binary op");
  }
  double wide = static_cast<double>(result);
  // Narrow floats compute in f32, then round to their storage dtype.
  if (dtype != DType::F64 && dtype != DType::F32)
    wide = roundToDType(wide, dtype);
  return Scalar::ofFloat(wide);
}

Scalar integerBinary(BinaryOp op, DType dtype, int64_t a, int64_t b) {
  if (auto cmp = compare(op, a, b))
    return boolScalar(*cmp);
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  auto wrapped = [dtype](uint64_t v) {
    return Scalar::ofInt(wrapInteger(static_cast<int64_t>(v), dtype));
  };
  switch (op) {
  case BinaryOp::Add: return wrapped(ua + ub);
  case BinaryOp::Sub: return wrapped(ua - ub);
  case BinaryOp::Mul: return wrapped(ua * ub);
  case BinaryOp::Div:
  case BinaryOp::Mod:
    // The graph's integer division never traps: x / 0 = 0, x / -1 = -x
    // (wrapping, so MIN / -1 = MIN), x % 0 = x % -1 = 0.
    if (b == 0)
      return Scalar::ofInt(0);
    if (b == -1)
      return op == BinaryOp::Mod ? Scalar::ofInt(0) : wrapped(0 - ua);
    return Scalar::ofInt(op == BinaryOp::Div ? a / b : a % b);
  case BinaryOp::Min: return Scalar::ofInt(std::min(a, b));
  case BinaryOp::Max: return Scalar::ofInt(std::max(a, b));
  case BinaryOp::And: return Scalar::ofInt(a & b);
  case BinaryOp::Or: return Scalar::ofInt(a | b);
  default: break;
  }
  KILN_UNREACHABLE("integer binary op");
}

Scalar boolBinary(BinaryOp op, int64_t a, int64_t b) {
  if (auto cmp = compare(op, a, b))
    return boolScalar(*cmp);
  switch (op) {
  case BinaryOp::And:
  case BinaryOp::Min: return boolScalar(a != 0 && b != 0);
  case BinaryOp::Or:
  case BinaryOp::Max: return boolScalar(a != 0 || b != 0);
  default: KILN_UNREACHABLE("unchecked bool binary op");
  }
}

/// The integer rounded to a double by truncation with a sticky last bit
/// ("round to odd"): rounding that to any format of at most 51 significand
/// bits gives the correctly rounded result, so int -> f16/bf16/f8 round once.
double roundToOdd(int64_t value) {
  double nearest = static_cast<double>(value);
  auto exact = static_cast<__int128>(nearest);
  if (exact == value)
    return nearest;
  double truncated = (nearest > 0) == (exact > value) ? std::nextafter(nearest, 0.0) : nearest;
  return std::bit_cast<double>(std::bit_cast<uint64_t>(truncated) | 1);
}

double integerToFloat(int64_t value, DType to) {
  switch (to) {
  case DType::F64: return static_cast<double>(value);
  case DType::F32: return static_cast<double>(static_cast<float>(value));
  default: return roundToDType(roundToOdd(value), to);
  }
}

int64_t floatToInteger(double value, DType to) {
  if (to != DType::I64)
    return static_cast<int64_t>(convertFloatToInteger(value, to));
  // Exact i64 saturation (convertFloatToInteger stops at 2^63 - 1024 because
  // the graph interpreter holds integers in doubles).
  if (std::isnan(value))
    return 0;
  if (value >= 9223372036854775808.0)
    return std::numeric_limits<int64_t>::max();
  if (value <= -9223372036854775808.0)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(std::trunc(value));
}

template <typename T> T floatIntrinsic(Intrinsic fn, const T *x) {
  switch (fn) {
  case Intrinsic::Exp: return std::exp(x[0]);
  case Intrinsic::Log: return std::log(x[0]);
  case Intrinsic::Sqrt: return std::sqrt(x[0]);
  case Intrinsic::Rsqrt: return T(1) / std::sqrt(x[0]);
  case Intrinsic::Tanh: return std::tanh(x[0]);
  case Intrinsic::Erf: return std::erf(x[0]);
  case Intrinsic::Sin: return std::sin(x[0]);
  case Intrinsic::Cos: return std::cos(x[0]);
  case Intrinsic::Abs: return std::fabs(x[0]);
  case Intrinsic::Floor: return std::floor(x[0]);
  case Intrinsic::Pow: return std::pow(x[0], x[1]);
  case Intrinsic::Fma: return std::fma(x[0], x[1], x[2]);
  }
  KILN_UNREACHABLE("intrinsic");
}

} // namespace

int64_t wrapInteger(int64_t value, DType dtype) {
  auto u = static_cast<uint64_t>(value);
  switch (dtype) {
  case DType::I32: return static_cast<int32_t>(static_cast<uint32_t>(u));
  case DType::I8: return static_cast<int8_t>(static_cast<uint8_t>(u));
  case DType::Bool: return value != 0 ? 1 : 0;
  default: return value;
  }
}

Expected<void> checkBinaryLane(BinaryOp op, DType dtype) {
  bool defined;
  if (isComparison(op))
    defined = true;
  else if (isFloatingPoint(dtype))
    defined = op != BinaryOp::And && op != BinaryOp::Or;
  else if (dtype == DType::Bool)
    defined =
        op == BinaryOp::And || op == BinaryOp::Or || op == BinaryOp::Min || op == BinaryOp::Max;
  else
    defined = true;
  if (!defined)
    return undefinedOn(binaryOpName(op), dtype);
  return {};
}

Scalar binaryLane(BinaryOp op, DType dtype, Scalar a, Scalar b) {
  if (dtype == DType::F64)
    return floatBinary<double>(op, dtype, a.f, b.f);
  if (isFloatingPoint(dtype))
    return floatBinary<float>(op, dtype, static_cast<float>(a.f), static_cast<float>(b.f));
  if (dtype == DType::Bool)
    return boolBinary(op, a.i, b.i);
  return integerBinary(op, dtype, a.i, b.i);
}

Expected<Scalar> evaluateBinaryLane(BinaryOp op, DType dtype, Scalar a, Scalar b) {
  KILN_TRY_VOID(checkBinaryLane(op, dtype));
  return binaryLane(op, dtype, a, b);
}

Expected<void> checkUnaryLane(UnaryOp op, DType dtype) {
  if (op == UnaryOp::Not ? dtype != DType::Bool : dtype == DType::Bool)
    return undefinedOn(op == UnaryOp::Not ? "not" : "neg", dtype);
  return {};
}

Scalar unaryLane(UnaryOp op, DType dtype, Scalar a) {
  if (op == UnaryOp::Not)
    return boolScalar(a.i == 0);
  if (isFloatingPoint(dtype))
    return Scalar::ofFloat(-a.f); // exact in every float format
  return Scalar::ofInt(wrapInteger(static_cast<int64_t>(0 - static_cast<uint64_t>(a.i)), dtype));
}

Expected<Scalar> evaluateUnaryLane(UnaryOp op, DType dtype, Scalar a) {
  KILN_TRY_VOID(checkUnaryLane(op, dtype));
  return unaryLane(op, dtype, a);
}

Scalar castLane(Scalar value, DType from, DType to) {
  if (from == to)
    return value;
  bool fromFloat = isFloatingPoint(from);
  if (to == DType::Bool)
    return boolScalar(fromFloat ? value.f != 0.0 : value.i != 0);
  if (isFloatingPoint(to)) {
    if (!fromFloat)
      return Scalar::ofFloat(integerToFloat(value.i, to));
    if (to == DType::F64)
      return value;
    if (to == DType::F32)
      return Scalar::ofFloat(static_cast<double>(static_cast<float>(value.f)));
    return Scalar::ofFloat(roundToDType(value.f, to));
  }
  if (fromFloat)
    return Scalar::ofInt(floatToInteger(value.f, to));
  return Scalar::ofInt(wrapInteger(value.i, to));
}

Expected<void> checkIntrinsicLane(Intrinsic fn, DType dtype, size_t argumentCount) {
  if (argumentCount != intrinsicArity(fn))
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{} takes {} arguments, got {}", intrinsicName(fn),
                                 intrinsicArity(fn), argumentCount));
  if (!isFloatingPoint(dtype) && (fn != Intrinsic::Abs || dtype == DType::Bool))
    return undefinedOn(intrinsicName(fn), dtype);
  return {};
}

Scalar intrinsicLane(Intrinsic fn, DType dtype, const Scalar *args) {
  if (!isFloatingPoint(dtype)) { // abs
    int64_t x = args[0].i;
    return Scalar::ofInt(
        wrapInteger(x < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x)) : x, dtype));
  }
  size_t count = intrinsicArity(fn);
  if (dtype == DType::F64) {
    double x[3] = {};
    for (size_t i = 0; i < count; ++i)
      x[i] = args[i].f;
    return Scalar::ofFloat(floatIntrinsic<double>(fn, x));
  }
  float x[3] = {};
  for (size_t i = 0; i < count; ++i)
    x[i] = static_cast<float>(args[i].f);
  double wide = static_cast<double>(floatIntrinsic<float>(fn, x));
  if (dtype != DType::F32)
    wide = roundToDType(wide, dtype);
  return Scalar::ofFloat(wide);
}

Expected<Scalar> evaluateIntrinsicLane(Intrinsic fn, DType dtype, std::span<const Scalar> args) {
  KILN_TRY_VOID(checkIntrinsicLane(fn, dtype, args.size()));
  return intrinsicLane(fn, dtype, args.data());
}

Scalar loadElement(const std::byte *bytes, DType dtype) {
  auto read = [bytes]<typename T>(T) {
    T v;
    std::memcpy(&v, bytes, sizeof(T));
    return v;
  };
  switch (dtype) {
  case DType::F64: return Scalar::ofFloat(read(double{}));
  case DType::F32: return Scalar::ofFloat(read(float{}));
  case DType::F16: return Scalar::ofFloat(halfBitsToFloat(read(uint16_t{})));
  case DType::BF16: return Scalar::ofFloat(bfloat16BitsToFloat(read(uint16_t{})));
  case DType::F8E4M3: return Scalar::ofFloat(f8e4m3BitsToFloat(read(uint8_t{})));
  case DType::F8E5M2: return Scalar::ofFloat(f8e5m2BitsToFloat(read(uint8_t{})));
  case DType::I64: return Scalar::ofInt(read(int64_t{}));
  case DType::I32: return Scalar::ofInt(read(int32_t{}));
  case DType::I8: return Scalar::ofInt(read(int8_t{}));
  case DType::Bool: return boolScalar(read(uint8_t{}) != 0);
  }
  KILN_UNREACHABLE("dtype");
}

void storeElement(std::byte *bytes, DType dtype, Scalar value) {
  auto write = [bytes]<typename T>(T v) { std::memcpy(bytes, &v, sizeof(T)); };
  switch (dtype) {
  case DType::F64: return write(value.f);
  case DType::F32: return write(static_cast<float>(value.f));
  case DType::F16: return write(doubleToHalfBits(value.f));
  case DType::BF16: return write(doubleToBFloat16Bits(value.f));
  case DType::F8E4M3: return write(doubleToF8E4M3Bits(value.f));
  case DType::F8E5M2: return write(doubleToF8E5M2Bits(value.f));
  case DType::I64: return write(value.i);
  case DType::I32: return write(static_cast<int32_t>(value.i));
  case DType::I8: return write(static_cast<int8_t>(value.i));
  case DType::Bool: return write(static_cast<uint8_t>(value.i != 0 ? 1 : 0));
  }
  KILN_UNREACHABLE("dtype");
}

} // namespace kiln::kir
