// Bit-exact host conversions between fp32/fp64 and the narrow float formats
// (f16, bf16, f8e4m3, f8e5m2), rounding to nearest even, and the rounding of
// fp32 to tf32.
#pragma once

#include <cstdint>

namespace kiln {

/// IEEE binary16. Overflow rounds to +-inf; NaN stays NaN (quiet).
uint16_t floatToHalfBits(float value);
float halfBitsToFloat(uint16_t bits);

/// bfloat16 (the top 16 bits of an fp32). Overflow rounds to +-inf; NaN stays NaN.
uint16_t floatToBFloat16Bits(float value);
float bfloat16BitsToFloat(uint16_t bits);

/// The fp8 encoders follow PTX `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32`, the only
/// f32 -> fp8 conversion the GPU has (.satfinite is mandatory there): round to
/// nearest even; NaN stays NaN; +-inf and every value beyond the largest finite
/// magnitude (MAX_NORM) become +-MAX_NORM. Values just above MAX_NORM would
/// round down to it anyway, so the clamp only changes what would otherwise
/// round to infinity (or, for e4m3, to the NaN pattern).

/// OCP FP8 E4M3 ("fn" variant): bias 7, no infinities, max finite 448, NaN is
/// S.1111.111. Encoding saturates: +-inf and |x| > 448 give +-448 (0x7e/0xfe).
uint8_t floatToF8E4M3Bits(float value);
float f8e4m3BitsToFloat(uint8_t bits);

/// OCP FP8 E5M2: bias 15, IEEE-like with infinities and NaN, max finite 57344.
/// Encoding saturates: +-inf and |x| > 57344 give +-57344 (0x7b/0xfb), never
/// inf; decoding the inf patterns 0x7c/0xfc still gives +-inf.
uint8_t floatToF8E5M2Bits(float value);
float f8e5m2BitsToFloat(uint8_t bits);

/// The same conversions from fp64, rounding once (not through fp32 first), so
/// the reference interpreter never double-rounds. Same overflow rules: IEEE
/// (inf) for f16 and bf16, satfinite for both fp8 formats.
uint16_t doubleToHalfBits(double value);
uint16_t doubleToBFloat16Bits(double value);
uint8_t doubleToF8E4M3Bits(double value);
uint8_t doubleToF8E5M2Bits(double value);

/// `value` rounded to tf32 (sign, 8 exponent bits, 10 explicit mantissa bits)
/// and kept as an fp32 whose low 13 mantissa bits are zero, as PTX
/// `cvt.rna.tf32.f32` does before a tf32 mma: round to nearest, ties away from
/// zero. NaN and +-inf pass through; a finite value that rounds past the
/// largest tf32 becomes +-inf.
float roundFloatToTf32(float value);

} // namespace kiln
