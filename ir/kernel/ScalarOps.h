// The meaning of one lane of every kernel IR operation: arithmetic, casts,
// intrinsics and the memory encoding of each dtype. The evaluator runs these,
// and simplify's constant folding calls the same functions, so a folded
// constant is by construction what the kernel would have computed.
#pragma once

#include "ir/kernel/KernelIR.h"
#include "support/Error.h"

#include <cstddef>
#include <cstdint>
#include <span>

namespace kiln::kir {

/// One lane's value. Integers and bools use `i` (bools are 0 or 1, integers
/// are sign-extended values of their width); floats use `f`, which always
/// holds a value exactly representable in the lane's dtype.
struct Scalar {
  int64_t i = 0;
  double f = 0.0;

  static Scalar ofInt(int64_t v) { return {v, 0.0}; }
  static Scalar ofFloat(double v) { return {0, v}; }
};

/// The floats that live only in memory (f16, bf16, f8e4m3, f8e5m2): registers hold them
/// widened to f32, and each store rounds once.
inline bool isNarrowFloat(DType dtype) {
  return isFloatingPoint(dtype) && dtype != DType::F32 && dtype != DType::F64;
}

/// Wraps `value` to the two's-complement width of integer dtype `dtype`
/// (i64, i32, i8); a bool becomes `value != 0`.
int64_t wrapInteger(int64_t value, DType dtype);

/// A binary op on operands of `dtype` (the result dtype is bool for
/// comparisons, `dtype` otherwise).
/// - Integers wrap (i64, i32, i8); Div and Mod truncate toward zero and, as the
///   graph's integer div does, never trap: x / 0 = 0, x / -1 = -x (so
///   MIN / -1 = MIN), x % 0 = x % -1 = 0. (Backends guard non-constant divisors.)
/// - f64 computes in double, f32 in float (IEEE, round to nearest even); the
///   narrow floats compute in f32 and round the result to their dtype. Mod is
///   fmod. Min and Max return NaN when either operand is NaN, as the graph's
///   minimum/maximum do, else `a < b ? a : b` / `a > b ? a : b`. Comparisons
///   are false on NaN except Ne.
/// - bool: And, Or, Min (and), Max (or) and comparisons (false < true).
///   And/Or on integers are bitwise.
/// The error, "add is not defined on bool", is for the combinations not listed.
Expected<Scalar> evaluateBinaryLane(BinaryOp op, DType dtype, Scalar a, Scalar b);

/// Neg (integers wrap, floats exact) and Not (bool only).
Expected<Scalar> evaluateUnaryLane(UnaryOp op, DType dtype, Scalar a);

/// The graph's cast semantics (see support/DType.h): float -> float rounds
/// to nearest even (f8 saturating); float -> integer truncates and saturates,
/// NaN -> 0 (i64 saturates at INT64_MIN/INT64_MAX exactly); integer -> float
/// rounds once to nearest even; integer -> integer wraps; anything -> bool is
/// `!= 0` (NaN -> true); bool -> anything is 0 or 1.
Scalar castLane(Scalar value, DType from, DType to);

/// An intrinsic on arguments of `dtype`: f64 through the double functions of
/// <cmath>, f32 through the float ones, narrow floats in f32 then rounded.
/// Abs also takes integers (wrapping: |MIN| is MIN). Rsqrt is 1 / sqrt(x).
Expected<Scalar> evaluateIntrinsicLane(Intrinsic fn, DType dtype, std::span<const Scalar> args);

/// The same operations split into a check of the (op, dtype) combination,
/// done once per node, and an unchecked per-lane part for the evaluator's
/// inner loop. Calling a lane function on a combination its check rejects is
/// a compiler bug.
Expected<void> checkBinaryLane(BinaryOp op, DType dtype);
Expected<void> checkUnaryLane(UnaryOp op, DType dtype);
Expected<void> checkIntrinsicLane(Intrinsic fn, DType dtype, size_t argumentCount);
Scalar binaryLane(BinaryOp op, DType dtype, Scalar a, Scalar b);
Scalar unaryLane(UnaryOp op, DType dtype, Scalar a);
/// `args` holds the intrinsic's 1 to 3 arguments.
Scalar intrinsicLane(Intrinsic fn, DType dtype, const Scalar *args);

/// Decodes / encodes one element of `dtype` in little-endian memory (bools
/// are one byte: any non-zero byte reads as true, true writes 1). `bytes`
/// must hold dtypeByteSize(dtype) bytes; no alignment is needed.
Scalar loadElement(const std::byte *bytes, DType dtype);
void storeElement(std::byte *bytes, DType dtype, Scalar value);

/// The zero of `dtype`.
inline Scalar zeroScalar() { return Scalar{}; }

} // namespace kiln::kir
