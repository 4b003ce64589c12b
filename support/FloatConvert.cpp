// Bit-exact conversions to and from the narrow float formats: one generic
// round-to-nearest-even encoder from fp64 and one exact decoder, parameterized
// by the format's exponent/mantissa widths and overflow rule.
#include "support/FloatConvert.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace kiln {
namespace {

/// A small binary float format: sign, `exponentBits`, `mantissaBits`.
/// Formats without infinity (the OCP "fn" variants) spend only the all-ones
/// pattern on NaN, so their top exponent still holds finite values.
struct SmallFloatFormat {
  int exponentBits;
  int mantissaBits;
  bool hasInfinity;
  /// PTX .satfinite: +-inf and finite values beyond the largest finite value
  /// clamp to it instead of becoming infinity (or NaN, for formats without
  /// infinity). NaN stays NaN either way.
  bool saturateFinite;

  int bias() const { return (1 << (exponentBits - 1)) - 1; }
  int minNormalExponent() const { return 1 - bias(); }
  uint32_t signBit() const { return 1u << (exponentBits + mantissaBits); }
  uint32_t exponentMask() const { return ((1u << exponentBits) - 1) << mantissaBits; }
  uint32_t mantissaMask() const { return (1u << mantissaBits) - 1; }
  uint32_t infinityBits() const { return exponentMask(); }
  /// The quiet NaN for IEEE-like formats; the single NaN pattern otherwise.
  uint32_t nanBits() const {
    return hasInfinity ? exponentMask() | (1u << (mantissaBits - 1))
                       : exponentMask() | mantissaMask();
  }
  /// Magnitude bits of the largest finite value.
  uint32_t maxFiniteBits() const {
    return hasInfinity ? exponentMask() - 1 : (exponentMask() | mantissaMask()) - 1;
  }
};

constexpr SmallFloatFormat kHalf{5, 10, true, false};
constexpr SmallFloatFormat kBFloat16{8, 7, true, false};
// Both fp8 formats saturate: cvt.rn.satfinite is the GPU's only f32 -> fp8
// conversion. f16 and bf16 follow cvt.rn.f16.f32 / cvt.rn.bf16.f32 (IEEE).
constexpr SmallFloatFormat kF8E4M3{4, 3, false, true};
constexpr SmallFloatFormat kF8E5M2{5, 2, true, true};

/// Rounds `value` to nearest-even in `format` and returns its bit pattern.
/// Works on the double's integer significand, so it rounds exactly once.
uint32_t encodeSmallFloat(double value, const SmallFloatFormat &format) {
  uint64_t doubleBits = std::bit_cast<uint64_t>(value);
  uint32_t sign = (doubleBits >> 63) ? format.signBit() : 0;
  if (std::isnan(value))
    return sign | format.nanBits();
  if (std::isinf(value)) {
    if (format.saturateFinite)
      return sign | format.maxFiniteBits();
    return sign | (format.hasInfinity ? format.infinityBits() : format.nanBits());
  }
  if (value == 0.0)
    return sign;

  // |value| = significand * 2^exponent, exactly.
  int doubleExponentField = static_cast<int>((doubleBits >> 52) & 0x7ff);
  uint64_t significand = doubleBits & ((uint64_t{1} << 52) - 1);
  int exponent;
  if (doubleExponentField == 0) {
    exponent = -1074;
  } else {
    significand |= uint64_t{1} << 52;
    exponent = doubleExponentField - 1075;
  }
  int topBit = 63 - std::countl_zero(significand);
  int valueExponent = topBit + exponent; // floor(log2 |value|)

  // The spacing of representable values near |value| is 2^quantumExponent;
  // below the normal range it stays at the subnormal spacing.
  int quantumExponent = std::max(valueExponent, format.minNormalExponent()) - format.mantissaBits;
  int shift = quantumExponent - exponent;
  uint64_t quanta; // |value| / 2^quantumExponent, rounded to nearest even
  if (shift <= 0) {
    quanta = significand << -shift; // exact: at most mantissaBits+1 bits
  } else if (shift > 54) {
    quanta = 0; // below half a quantum (significand < 2^53 <= 2^(shift-1))
  } else {
    uint64_t remainder = significand & ((uint64_t{1} << shift) - 1);
    uint64_t half = uint64_t{1} << (shift - 1);
    quanta = significand >> shift;
    if (remainder > half || (remainder == half && (quanta & 1)))
      ++quanta;
  }

  // Subnormals encode as the quanta count itself; normals add the exponent
  // field. A rounding carry out of the mantissa lands in the exponent field.
  int64_t magnitude =
      (static_cast<int64_t>(quantumExponent + format.mantissaBits - format.minNormalExponent())
       << format.mantissaBits) +
      static_cast<int64_t>(quanta);
  if (magnitude > static_cast<int64_t>(format.maxFiniteBits())) {
    if (format.saturateFinite)
      return sign | format.maxFiniteBits();
    return sign | (format.hasInfinity ? format.infinityBits() : format.nanBits());
  }
  return sign | static_cast<uint32_t>(magnitude);
}

/// The exact value of a bit pattern of `format`.
double decodeSmallFloat(uint32_t bits, const SmallFloatFormat &format) {
  bool negative = (bits & format.signBit()) != 0;
  uint32_t exponentField = (bits & format.exponentMask()) >> format.mantissaBits;
  uint32_t mantissa = bits & format.mantissaMask();
  uint32_t allOnesExponent = (1u << format.exponentBits) - 1;
  double magnitude;
  if (format.hasInfinity && exponentField == allOnesExponent) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::quiet_NaN();
  } else if (!format.hasInfinity && (bits & ~format.signBit()) == format.nanBits()) {
    magnitude = std::numeric_limits<double>::quiet_NaN();
  } else if (exponentField == 0) {
    magnitude =
        std::ldexp(static_cast<double>(mantissa), format.minNormalExponent() - format.mantissaBits);
  } else {
    magnitude = std::ldexp(static_cast<double>((1u << format.mantissaBits) | mantissa),
                           static_cast<int>(exponentField) - format.bias() - format.mantissaBits);
  }
  return negative ? -magnitude : magnitude;
}

} // namespace

// The float overloads widen to double first: float -> double is exact, so the
// single rounding happens in the generic encoder.
uint16_t floatToHalfBits(float value) { return doubleToHalfBits(value); }
float halfBitsToFloat(uint16_t bits) { return static_cast<float>(decodeSmallFloat(bits, kHalf)); }

uint16_t floatToBFloat16Bits(float value) { return doubleToBFloat16Bits(value); }
float bfloat16BitsToFloat(uint16_t bits) {
  // bf16 is the top half of an fp32, so widening is a shift (NaN payloads kept).
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint8_t floatToF8E4M3Bits(float value) { return doubleToF8E4M3Bits(value); }
float f8e4m3BitsToFloat(uint8_t bits) {
  return static_cast<float>(decodeSmallFloat(bits, kF8E4M3));
}

uint8_t floatToF8E5M2Bits(float value) { return doubleToF8E5M2Bits(value); }
float f8e5m2BitsToFloat(uint8_t bits) {
  return static_cast<float>(decodeSmallFloat(bits, kF8E5M2));
}

uint16_t doubleToHalfBits(double value) {
  return static_cast<uint16_t>(encodeSmallFloat(value, kHalf));
}
uint16_t doubleToBFloat16Bits(double value) {
  return static_cast<uint16_t>(encodeSmallFloat(value, kBFloat16));
}
uint8_t doubleToF8E4M3Bits(double value) {
  return static_cast<uint8_t>(encodeSmallFloat(value, kF8E4M3));
}
uint8_t doubleToF8E5M2Bits(double value) {
  return static_cast<uint8_t>(encodeSmallFloat(value, kF8E5M2));
}

float roundFloatToTf32(float value) {
  if (!std::isfinite(value))
    return value;
  // Adding half of the dropped 13 bits to the magnitude rounds ties away from
  // zero; a carry out of the mantissa bumps the exponent (up to infinity).
  uint32_t bits = std::bit_cast<uint32_t>(value) + 0x1000u;
  return std::bit_cast<float>(bits & ~uint32_t{0x1fff});
}

} // namespace kiln
