// Element types of tensors, their names and sizes, and the rounding of an fp64
// value to each of them (the reference interpreter's model of dtype semantics).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

// X-macro: enumerator, text name, byte size, is floating point, is integer.
#define KILN_DTYPES(X)                                                                             \
  X(F64, "f64", 8, true, false)                                                                    \
  X(F32, "f32", 4, true, false)                                                                    \
  X(F16, "f16", 2, true, false)                                                                    \
  X(BF16, "bf16", 2, true, false)                                                                  \
  X(F8E4M3, "f8e4m3", 1, true, false)                                                              \
  X(F8E5M2, "f8e5m2", 1, true, false)                                                              \
  X(I64, "i64", 8, false, true)                                                                    \
  X(I32, "i32", 4, false, true)                                                                    \
  X(I8, "i8", 1, false, true)                                                                      \
  X(Bool, "bool", 1, false, false)

/// A storage element type. tf32 is not here: it is a compute mode of f32
/// contractions (an op attribute), never a storage type.
enum class DType : uint8_t {
#define KILN_DTYPE_ENUM(name, text, size, isFloat, isInt) name,
  KILN_DTYPES(KILN_DTYPE_ENUM)
#undef KILN_DTYPE_ENUM
};

inline constexpr int kNumDTypes = 0
#define KILN_DTYPE_COUNT(name, text, size, isFloat, isInt) +1
    KILN_DTYPES(KILN_DTYPE_COUNT)
#undef KILN_DTYPE_COUNT
    ;

std::string_view dtypeName(DType type);
std::optional<DType> parseDType(std::string_view text);
int dtypeByteSize(DType type);
bool isFloatingPoint(DType type);
bool isInteger(DType type);
inline bool isBool(DType type) { return type == DType::Bool; }

/// Rounds an fp64 value to the nearest value representable in `type` and
/// returns it as fp64: the model of storing a value in a tensor of `type`.
/// - f32, f16, bf16: round to nearest even; overflow gives +-inf (IEEE, as
///   cvt.rn.f32.f64 / cvt.rn.f16.f32 / cvt.rn.bf16.f32 do).
/// - f8e4m3, f8e5m2: round to nearest even with satfinite (cvt.rn.satfinite):
///   +-inf and overflow give +-max finite (448, 57344); NaN stays NaN.
/// - i8, i32, i64: truncate toward zero, then wrap two's-complement modulo 2^N
///   (NaN and +-inf give 0). This is the rule for values that are already
///   integers — integer arithmetic results, int -> int casts, constants — and
///   matches cvt.sN.sM without .sat. It is not the float -> integer
///   conversion of a cast, which saturates: see convertFloatToInteger.
/// - bool: x != 0 (NaN gives true).
double roundToDType(double value, DType type);

/// The largest fp64 value an i64 can hold in the reference interpreter,
/// 2^63 - 1024: INT64_MAX (2^63 - 1) is not an fp64 value, and the nearest
/// one, 2^63, is out of range (converting it to int64_t is undefined).
inline constexpr double kMaxI64AsDouble = 9223372036854774784.0;

/// A float -> integer conversion as NVIDIA GPUs do it (cvt.rzi.sN.fM):
/// truncate toward zero, saturate to the range of `type` (i8, i32 or i64),
/// and give 0 for NaN; +-inf give the minimum / maximum. The result is an
/// exact fp64 integer. Limitation: for i64 the maximum is kMaxI64AsDouble
/// (INT64_MAX - 1023), not INT64_MAX, because the interpreter holds values in
/// fp64; the minimum, -2^63, is exact. `type` must be an integer dtype.
double convertFloatToInteger(double value, DType type);

} // namespace kiln
