// DType names, sizes and classes (expanded from KILN_DTYPES), roundToDType,
// the reference model of what storing an fp64 value in each dtype does, and
// convertFloatToInteger, the model of a saturating float -> integer cast.
#include "support/DType.h"

#include "support/Error.h"
#include "support/FloatConvert.h"

#include <cmath>

namespace kiln {

std::string_view dtypeName(DType type) {
  switch (type) {
#define KILN_DTYPE_NAME(name, text, size, isFloat, isInt)                                          \
  case DType::name: return text;
    KILN_DTYPES(KILN_DTYPE_NAME)
#undef KILN_DTYPE_NAME
  }
  KILN_UNREACHABLE("invalid DType value " + std::to_string(static_cast<int>(type)));
}

std::optional<DType> parseDType(std::string_view text) {
#define KILN_DTYPE_PARSE(name, textName, size, isFloat, isInt)                                     \
  if (text == textName)                                                                            \
    return DType::name;
  KILN_DTYPES(KILN_DTYPE_PARSE)
#undef KILN_DTYPE_PARSE
  return std::nullopt;
}

int dtypeByteSize(DType type) {
  switch (type) {
#define KILN_DTYPE_SIZE(name, text, size, isFloat, isInt)                                          \
  case DType::name: return size;
    KILN_DTYPES(KILN_DTYPE_SIZE)
#undef KILN_DTYPE_SIZE
  }
  KILN_UNREACHABLE("invalid DType value " + std::to_string(static_cast<int>(type)));
}

bool isFloatingPoint(DType type) {
  switch (type) {
#define KILN_DTYPE_IS_FLOAT(name, text, size, isFloat, isInt)                                      \
  case DType::name: return isFloat;
    KILN_DTYPES(KILN_DTYPE_IS_FLOAT)
#undef KILN_DTYPE_IS_FLOAT
  }
  KILN_UNREACHABLE("invalid DType value " + std::to_string(static_cast<int>(type)));
}

bool isInteger(DType type) {
  switch (type) {
#define KILN_DTYPE_IS_INT(name, text, size, isFloat, isInt)                                        \
  case DType::name: return isInt;
    KILN_DTYPES(KILN_DTYPE_IS_INT)
#undef KILN_DTYPE_IS_INT
  }
  KILN_UNREACHABLE("invalid DType value " + std::to_string(static_cast<int>(type)));
}

namespace {

/// Truncates toward zero and wraps modulo 2^64 (two's complement), the way a
/// cast chain through a 64-bit register behaves for in-range values; NaN and
/// +-inf have no integer meaning and become 0.
uint64_t truncateAndWrap(double value) {
  if (!std::isfinite(value))
    return 0;
  // fmod is exact, so |wrapped| < 2^64 is an integer converting without loss.
  double wrapped = std::fmod(std::trunc(value), 18446744073709551616.0);
  uint64_t magnitude = static_cast<uint64_t>(std::fabs(wrapped));
  return wrapped < 0 ? ~magnitude + 1 : magnitude;
}

} // namespace

double convertFloatToInteger(double value, DType type) {
  double low;
  double high;
  switch (type) {
  case DType::I8:
    low = -128.0;
    high = 127.0;
    break;
  case DType::I32:
    low = -2147483648.0;
    high = 2147483647.0;
    break;
  case DType::I64:
    low = -9223372036854775808.0;
    high = kMaxI64AsDouble;
    break;
  default:
    KILN_UNREACHABLE("convertFloatToInteger: " + std::string(dtypeName(type)) +
                          " is not an integer dtype");
  }
  if (std::isnan(value))
    return 0.0;
  // Clamping before truncating is the same as after: both bounds are integers.
  // The clamped value is in range, so later wrapping (roundToDType) keeps it.
  return std::trunc(std::fmin(std::fmax(value, low), high));
}

double roundToDType(double value, DType type) {
  switch (type) {
  case DType::F64: return value;
  case DType::F32: return static_cast<double>(static_cast<float>(value));
  case DType::F16: return halfBitsToFloat(doubleToHalfBits(value));
  case DType::BF16: return bfloat16BitsToFloat(doubleToBFloat16Bits(value));
  case DType::F8E4M3: return f8e4m3BitsToFloat(doubleToF8E4M3Bits(value));
  case DType::F8E5M2: return f8e5m2BitsToFloat(doubleToF8E5M2Bits(value));
  // Every wrapped int64 of a double's integer part is itself a double (its
  // low bits are as zero as the input's), so these returns are exact.
  case DType::I64: return static_cast<double>(static_cast<int64_t>(truncateAndWrap(value)));
  case DType::I32: return static_cast<int32_t>(static_cast<uint32_t>(truncateAndWrap(value)));
  case DType::I8: return static_cast<int8_t>(static_cast<uint8_t>(truncateAndWrap(value)));
  case DType::Bool: return value != 0.0 ? 1.0 : 0.0; // NaN != 0: true
  }
  KILN_UNREACHABLE("invalid DType value " + std::to_string(static_cast<int>(type)));
}

} // namespace kiln
