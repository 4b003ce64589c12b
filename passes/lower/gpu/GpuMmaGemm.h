// The tensor-core GEMM template: C[b][i][j] = sum_k A(b,i,k) B(b,k,j) for dense f16/bf16 (or
// tf32, or e4m3) operands with f32 accumulation, on mma.sync or wgmma. See docs/gpu-tensor-cores.md.
#pragma once

#include "codegen/Target.h"
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/GemmTemplate.h"
#include "passes/lower/GpuSchedule.h"
#include "support/Error.h"

namespace kiln::lower {

/// Lowers `problem`, whose GemmShape is `shape`, with a tensor-core `schedule` (checked with
/// checkGpuMmaSchedule against `shape`): a block
/// per (batch and K split, M tile, N tile) keeps `stages` XOR-swizzled shared tiles of A and B,
/// runs the schedule's K loop into f32 register accumulators -- cp.async + mma.sync per warp,
/// cp.async + wgmma per warpgroup (sm_90a), or a TMA producer thread feeding wgmma consumers
/// through mbarriers (MmaGemmBuilder.h) -- and runs storeResult once per output element,
/// guarded at the edges. With splitK > 1 the accumulators go to f32 partial sums instead, and
/// a follow-up kernel ("splitk_sum") adds them in split order and runs storeResult. Elements
/// outside the problem arrive as zeros (predicated copies), so edges need no other care.
Expected<GemmLowering> lowerGpuMmaGemm(const GemmProblem &problem, const GemmShape &shape,
                                       const GpuMatMulSchedule &schedule,
                                       const codegen::GpuTarget &target);

} // namespace kiln::lower
