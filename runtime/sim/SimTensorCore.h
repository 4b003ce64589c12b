// The arithmetic of a warp's matrix product (kir::Mma) in the simulator: the
// 32 lanes' fragments placed into matrices by kir::mmaFragmentPosition, the
// product computed in a fixed order, and D handed back as the lanes hold it.
#pragma once

#include "ir/kernel/KernelIR.h"

#include <span>

namespace kiln::sim {

/// D = A x B + C for one warp. Fragments are lane-major: value e of lane l is
/// at [l * count + e], count being mmaShapeInfo(kind)'s a/b/cElements. `a` and
/// `b` are the operand values the fragment buffers hold (f16, bf16 and e4m3
/// decoded exactly; f32 for tf32, rounded here as cvt.rna.tf32.f32 does).
///
/// Order of arithmetic, so runs are reproducible: each product A[i][p] * B[p][j]
/// is rounded to f32 (exact for every operand type, whose significands have at
/// most 11 bits, unless it leaves f32's range, which only bf16 and tf32 can);
/// then D[i][j] = (((C[i][j] + P0) + P1) + ...) + P(k-1), each addition an f32
/// addition rounded to nearest even. Tensor cores round the sum differently
/// (and need not be sequential), so tests compare against hardware within a
/// tolerance. NaN and infinities propagate as f32 arithmetic does.
///
/// `d` must not overlap the inputs (the caller reads every fragment first).
void warpMma(kir::MmaKind kind, std::span<const double> a, std::span<const double> b,
             std::span<const float> c, std::span<float> d);

/// D = A x B (+ D) for one warpgroup product: `a` the 64 x k operand row-major, `b` the
/// k x n one row-major, `d` the 64 x n accumulators row-major (read when `accumulate`). The
/// arithmetic is warpMma's: f32-rounded products summed in order of k into f32.
void warpgroupMma(int n, int k, std::span<const double> a, std::span<const double> b,
                  std::span<float> d, bool accumulate);

} // namespace kiln::sim
