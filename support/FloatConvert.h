// Bit-exact host conversions between fp32/fp64 and the narrow float formats
// (f16, bf16, f8e4m3, f8e5m2), rounding to nearest even.
#pragma once

#include <cstdint>

namespace kiln {

/// IEEE binary16. Overflow rounds to +-inf; NaN stays NaN (quiet).
uint16_t floatToHalfBits(float value);
float halfBitsToFloat(uint16_t bits);

/// bfloat16 (the top 16 bits of an fp32). Overflow rounds to +-inf; NaN stays NaN.
uint16_t floatToBFloat16Bits(float value);
float bfloat16BitsToFloat(uint16_t bits);

/// OCP FP8 E4M3 ("fn" variant): bias 7, no infinities, max finite 448, NaN is
/// S.1111.111. Finite values beyond the range saturate to +-448 (the OCP
/// "satfinite" rule used by cvt.rn.satfinite on NVIDIA GPUs); inf and NaN become NaN.
uint8_t floatToF8E4M3Bits(float value);
float f8e4m3BitsToFloat(uint8_t bits);

/// OCP FP8 E5M2: bias 15, IEEE-like with infinities and NaN, max finite 57344.
/// Overflow rounds to +-inf as IEEE does; NaN stays NaN.
uint8_t floatToF8E5M2Bits(float value);
float f8e5m2BitsToFloat(uint8_t bits);

/// The same conversions from fp64, rounding once (not through fp32 first), so
/// the reference interpreter never double-rounds.
uint16_t doubleToHalfBits(double value);
uint16_t doubleToBFloat16Bits(double value);
uint8_t doubleToF8E4M3Bits(double value);
uint8_t doubleToF8E5M2Bits(double value);

} // namespace kiln
