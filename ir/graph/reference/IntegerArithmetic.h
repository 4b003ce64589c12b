// Two's-complement integer arithmetic for the reference interpreter: integer
// ops compute in 64-bit wrapping arithmetic instead of fp64, so products and
// sums past 2^53 keep their low bits before the result is wrapped to its dtype.
#pragma once

#include "support/DType.h"

#include <cstdint>

namespace kiln::ir::reference {

/// An integral fp64 value as a 64-bit two's-complement pattern. Unsigned
/// arithmetic on the pattern wraps instead of overflowing (no UB).
/// Values outside [-2^63, 2^64) (and NaN) cannot come from an integer dtype;
/// they map to 0 rather than to undefined behaviour.
inline uint64_t toWrapping(double value) {
  if (value >= 0)
    return value < 18446744073709551616.0 ? static_cast<uint64_t>(value) : 0;
  if (value >= -9223372036854775808.0)
    return static_cast<uint64_t>(static_cast<int64_t>(value));
  return 0;
}

/// The value of a two's-complement pattern wrapped to the integer `dtype`, as
/// fp64. Wrapping here, before the conversion to fp64, keeps the low bits that
/// fp64 would drop (an i32 product of 2^62 magnitude). i64 values beyond 2^53
/// still round: the interpreter holds every value in fp64.
inline double fromWrapping(uint64_t bits, DType dtype) {
  switch (dtype) {
  case DType::I32: return static_cast<int32_t>(static_cast<uint32_t>(bits));
  case DType::I8: return static_cast<int8_t>(static_cast<uint8_t>(bits));
  default: return static_cast<double>(static_cast<int64_t>(bits));
  }
}

/// Integer division truncating toward zero; division by zero gives 0 and
/// INT64_MIN / -1 wraps to INT64_MIN, so the reference never traps.
inline int64_t divideTruncating(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  return a / b;
}

} // namespace kiln::ir::reference
