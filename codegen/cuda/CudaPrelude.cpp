// The helpers every generated CUDA C translation unit starts with: narrow
// float conversions (hardware cvt where the target has it, an exact software
// encoder elsewhere), integer math that wraps and never traps, and min/max
// that propagate NaN, as docs/kernel-ir.md defines them.
#include "codegen/cuda/CudaSource.h"

#include <fmt/format.h>

namespace kiln::codegen::cuda {
namespace {

constexpr const char *kCommonPrelude = R"(// A tensor map (CUtensorMap): 128 opaque bytes the launcher encodes, passed by value,
// aligned as CUDA 13 aligns CUtensorMap.
struct __align__(128) kiln_tensor_map { unsigned long long opaque[16]; };

// Aligned vector accesses as values: V is float4, uint2, ... of the access's
// byte size. Vector values stay in registers; their lanes are V's fields.
template <typename V, typename T>
__device__ __forceinline__ V kiln_load(const T *source) { return *reinterpret_cast<const V *>(source); }
template <typename V, typename T>
__device__ __forceinline__ void kiln_store(T *destination, V value) { *reinterpret_cast<V *>(destination) = value; }

// Integer math of the kernel IR: wraps in two's complement, x / 0 = 0,
// MIN / -1 = MIN, x % 0 = x % -1 = 0, |MIN| = MIN.
#define KILN_INTEGER_HELPERS(suffix, T, U)                                                          \
  __device__ __forceinline__ T kiln_add_##suffix(T a, T b) { return (T)((U)a + (U)b); }                     \
  __device__ __forceinline__ T kiln_sub_##suffix(T a, T b) { return (T)((U)a - (U)b); }                     \
  __device__ __forceinline__ T kiln_mul_##suffix(T a, T b) { return (T)((U)a * (U)b); }                     \
  __device__ __forceinline__ T kiln_neg_##suffix(T a) { return (T)((U)0 - (U)a); }                          \
  __device__ __forceinline__ T kiln_div_##suffix(T a, T b) {                                                 \
    return b == 0 ? (T)0 : b == -1 ? kiln_neg_##suffix(a) : (T)(a / b);                            \
  }                                                                                                \
  __device__ __forceinline__ T kiln_mod_##suffix(T a, T b) { return (b == 0 || b == -1) ? (T)0 : (T)(a % b); } \
  __device__ __forceinline__ T kiln_min_##suffix(T a, T b) { return a < b ? a : b; }                        \
  __device__ __forceinline__ T kiln_max_##suffix(T a, T b) { return a > b ? a : b; }                        \
  __device__ __forceinline__ T kiln_abs_##suffix(T a) { return a < 0 ? kiln_neg_##suffix(a) : a; }
KILN_INTEGER_HELPERS(i8, signed char, unsigned char)
KILN_INTEGER_HELPERS(i32, int, unsigned int)
KILN_INTEGER_HELPERS(i64, long long, unsigned long long)

// Float min/max return NaN when either operand is NaN.
__device__ __forceinline__ float kiln_min_f32(float a, float b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
__device__ __forceinline__ float kiln_max_f32(float a, float b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
__device__ __forceinline__ double kiln_min_f64(double a, double b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
__device__ __forceinline__ double kiln_max_f64(double a, double b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }

// Float -> i8 truncates and saturates, NaN -> 0 (cvt.rzi.s32 saturates, then clamp).
__device__ __forceinline__ signed char kiln_f32_to_i8(float x) { int v = __float2int_rz(x); return (signed char)(v < -128 ? -128 : v > 127 ? 127 : v); }
__device__ __forceinline__ signed char kiln_f64_to_i8(double x) { int v = __double2int_rz(x); return (signed char)(v < -128 ? -128 : v > 127 ? 127 : v); }

// Narrow floats are stored as bits: f16 and bf16 in unsigned short, f8 in unsigned char.
__device__ __forceinline__ float kiln_f16_to_f32(unsigned short bits) {
  float value;
  asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(bits));
  return value;
}
__device__ __forceinline__ unsigned short kiln_f32_to_f16(float value) {
  unsigned short bits;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(value));
  return bits;
}
__device__ __forceinline__ float kiln_bf16_to_f32(unsigned short bits) { return __uint_as_float((unsigned int)bits << 16); }
__device__ __forceinline__ unsigned short kiln_f32_to_bf16(float value) {
  unsigned short bits;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(value));
  return bits;
}

// A tensor-core tf32 operand: f32 rounded to 10 mantissa bits, to nearest
// with ties away from zero, as the mma's tf32 input.
__device__ __forceinline__ unsigned kiln_f32_to_tf32(float value) {
  unsigned bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(value));
  return bits;
}

// Rounds x to nearest even in a float format of `exponentBits` and
// `mantissaBits` and returns its bits; rounds once from double, so it also
// serves f64 sources. Overflow gives infinity, or the largest finite value
// with `satfinite` (cvt.rn.satfinite); NaN stays NaN. Formats without
// infinity (e4m3) keep only the all-ones pattern for NaN.
__device__ __forceinline__ unsigned int kiln_encode_small_float(double x, int exponentBits, int mantissaBits,
                                                       bool hasInfinity, bool satfinite) {
  const unsigned int sign = signbit(x) ? 1u << (exponentBits + mantissaBits) : 0u;
  const unsigned int exponentMask = ((1u << exponentBits) - 1) << mantissaBits;
  const unsigned int mantissaMask = (1u << mantissaBits) - 1;
  const unsigned int nanBits = hasInfinity ? exponentMask | (1u << (mantissaBits - 1)) : exponentMask | mantissaMask;
  const unsigned int maxFinite = hasInfinity ? exponentMask - 1 : (exponentMask | mantissaMask) - 1;
  const unsigned int overflow = satfinite ? maxFinite : hasInfinity ? exponentMask : nanBits;
  if (isnan(x)) return sign | nanBits;
  const double magnitude = fabs(x);
  if (isinf(magnitude)) return sign | overflow;
  if (magnitude == 0.0) return sign;
  const int minNormalExponent = 2 - (1 << (exponentBits - 1));
  const int exponent = ilogb(magnitude);
  // Representable values near x are spaced 2^quantum apart; scaling by a
  // power of two is exact, so rint rounds exactly once (to nearest even).
  const int quantum = (exponent > minNormalExponent ? exponent : minNormalExponent) - mantissaBits;
  const long long quanta = (long long)rint(ldexp(magnitude, -quantum));
  const long long bits = ((long long)(quantum + mantissaBits - minNormalExponent) << mantissaBits) + quanta;
  if (bits > (long long)maxFinite) return sign | overflow;
  return sign | (unsigned int)bits;
}

// The exact value of a small float's bits (every f8 value is an f32).
__device__ __forceinline__ float kiln_decode_small_float(unsigned int bits, int exponentBits, int mantissaBits, bool hasInfinity) {
  const unsigned int signBit = 1u << (exponentBits + mantissaBits);
  const unsigned int allOnes = (1u << exponentBits) - 1;
  const unsigned int field = (bits >> mantissaBits) & allOnes;
  const unsigned int mantissa = bits & ((1u << mantissaBits) - 1);
  const int bias = (1 << (exponentBits - 1)) - 1;
  float magnitude;
  if (hasInfinity && field == allOnes) {
    magnitude = mantissa == 0 ? __int_as_float(0x7f800000) : __int_as_float(0x7fffffff);
  } else if (!hasInfinity && field == allOnes && mantissa == (1u << mantissaBits) - 1) {
    magnitude = __int_as_float(0x7fffffff);
  } else if (field == 0) {
    magnitude = ldexpf((float)mantissa, 1 - bias - mantissaBits);
  } else {
    magnitude = ldexpf((float)((1u << mantissaBits) | mantissa), (int)field - bias - mantissaBits);
  }
  return (bits & signBit) ? -magnitude : magnitude;
}

__device__ __forceinline__ float kiln_f8e4m3_to_f32(unsigned char bits) { return kiln_decode_small_float(bits, 4, 3, false); }
__device__ __forceinline__ float kiln_f8e5m2_to_f32(unsigned char bits) { return kiln_decode_small_float(bits, 5, 2, true); }
__device__ __forceinline__ unsigned short kiln_f64_to_f16(double x) { return (unsigned short)kiln_encode_small_float(x, 5, 10, true, false); }
__device__ __forceinline__ unsigned short kiln_f64_to_bf16(double x) { return (unsigned short)kiln_encode_small_float(x, 8, 7, true, false); }
__device__ __forceinline__ unsigned char kiln_f64_to_f8e4m3(double x) { return (unsigned char)kiln_encode_small_float(x, 4, 3, false, true); }
__device__ __forceinline__ unsigned char kiln_f64_to_f8e5m2(double x) { return (unsigned char)kiln_encode_small_float(x, 5, 2, true, true); }
)";

// sm_89 and later convert f32 to f8 in hardware; the packed cvt writes its
// first source to the upper byte, so the value goes second.
constexpr const char *kHardwareF8 = R"(
__device__ __forceinline__ unsigned char kiln_f32_to_f8e4m3(float value) {
  unsigned short pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(value));
  return (unsigned char)(pair & 0xff);
}
__device__ __forceinline__ unsigned char kiln_f32_to_f8e5m2(float value) {
  unsigned short pair;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(value));
  return (unsigned char)(pair & 0xff);
}
)";

// Before sm_89 there is no f8 cvt: f32 widens to double exactly and the
// software encoder rounds once, bit for bit as support/FloatConvert does.
constexpr const char *kSoftwareF8 = R"(
__device__ __forceinline__ unsigned char kiln_f32_to_f8e4m3(float value) { return kiln_f64_to_f8e4m3((double)value); }
__device__ __forceinline__ unsigned char kiln_f32_to_f8e5m2(float value) { return kiln_f64_to_f8e5m2((double)value); }
)";

} // namespace

std::string cudaPrelude(const GpuTarget &target) {
  return fmt::format("// CUDA C generated by kiln for {}.\n\n{}{}", target.archName(),
                     kCommonPrelude, target.sm >= 89 ? kHardwareF8 : kSoftwareF8);
}

} // namespace kiln::codegen::cuda
