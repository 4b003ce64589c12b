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
/// returns it as fp64: round-to-nearest-even for floats (with each format's
/// overflow rule), truncation toward zero with two's-complement wrap for
/// integers (NaN and +-inf become 0), and x != 0 for bool.
double roundToDType(double value, DType type);

} // namespace kiln
