// The tensor-core GEMM template: C[b][i][j] = sum_k A(b,i,k) B(b,k,j) for dense f16/bf16 (or
// tf32, or e4m3) operands with f32 accumulation, on mma.sync. See docs/gpu-tensor-cores.md.
#pragma once

#include "codegen/Target.h"
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/GemmTemplate.h"
#include "passes/lower/GpuSchedule.h"
#include "support/Error.h"

namespace kiln::lower {

/// The GemmShape the tensor-core schedules look at, read off a lowered problem.
GemmShape gemmShapeOf(const GemmProblem &problem);

/// Lowers `problem` with a tensor-core `schedule` (checked with checkGpuMmaSchedule):
///
///   for batch and K split, M tile, N tile (block.z / y / x, as the CUDA-core template):
///     shared A and B tiles, `stages` of each, rows of 16-byte chunks XOR-swizzled
///     for tid (thread.x): warp = tid / 32 owns a warpM x warpN tile of the block's
///       register acc (f32, mma C layout), A and B fragments
///       prologue: async copies of tiles 0 .. stages-2, one commit each
///       for each K tile t of the split: wait until tile t has landed, barrier, issue tile
///                          t+stages-1, commit, then per k step: ldmatrix (or element loads
///                          for tf32 and e4m3 operands not K-contiguous) + mma
///       epilogue: storeResult at each accumulator's (i, j), guarded at the edges; with
///                 splitK > 1 the accumulators go to the f32 workspace partials[split] instead
///   splitK > 1: a follow-up kernel ("splitk_sum") adds each element's partials in split order
///               and runs storeResult
///
/// With `schedule.wgmma` (sm_90a) a warpgroup of 128 threads owns each warpM x warpN tile:
/// the tiles are laid out in 128-byte panels (the canonical swizzled layout of
/// ir/kernel/WgmmaLayout.h), and each K tile runs: wait for its copies, fence them for the
/// async proxy, barrier, issue the next copies, then wgmma.fence, one wgmma per K step and 64
/// rows, commit, and wait until at most one group (with 3+ stages) is in flight.
///
/// Elements outside the problem arrive as zeros (predicated copies), so edges need no other
/// care. The epilogue runs once per output element.
Expected<GemmLowering> lowerGpuMmaGemm(const GemmProblem &problem,
                                       const GpuMatMulSchedule &schedule,
                                       const codegen::GpuTarget &target);

} // namespace kiln::lower
