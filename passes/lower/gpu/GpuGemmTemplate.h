// The GPU GEMM template on CUDA cores: C[b][i][j] = sum_k A(b,i,k) B(b,k,j) with a block per
// blockM x blockN output tile, K staged through shared memory in blockK steps (double-buffered
// with two stages), and a threadM x threadN register tile per thread. A and B are the same
// element functions as the CPU template's (GemmProblem), so transposes, broadcast batches and
// implicit im2col come for free.
#pragma once

#include "codegen/Target.h"
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/GemmTemplate.h"
#include "passes/lower/GpuSchedule.h"
#include "support/Error.h"

namespace kiln::lower {

/// Lowers `problem`, whose GemmShape is `shape` (the one its schedules were chosen for), with
/// `schedule` (checked with checkGpuGemmSchedule, or for tensor cores lowerGpuMmaGemm's
/// checkGpuMmaSchedule) for `target`. The body
/// has the GpuLaunch structure: block loops x (N tiles), y (M tiles), z (batch) -- all folded
/// into x when a grid axis would exceed its limit -- the shared tiles, then one thread.x loop.
/// The epilogue (`problem.storeResult`) runs once per output element. No workspaces.
Expected<GemmLowering> lowerGpuGemm(const GemmProblem &problem, const GemmShape &shape,
                                    const GpuMatMulSchedule &schedule,
                                    const codegen::GpuTarget &target);

} // namespace kiln::lower
