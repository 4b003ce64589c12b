// GPU GEMM schedules (GpuMatMulSchedule): which are legal for a problem on a target, the
// heuristic default and the space the autotuner searches. Shared by matmul and conv2d.
#pragma once

#include "codegen/Target.h"
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/GpuSchedule.h"
#include "support/Error.h"

#include <cstdint>
#include <vector>

namespace kiln::lower {

/// Static shared memory of one block: `stages` A tiles (blockM x blockK) and B tiles
/// (blockK x blockN) in the accumulate dtype.
int64_t gpuGemmSharedBytes(const GpuMatMulSchedule &schedule, DType accumulate);

/// Threads per block: (blockM / threadM) * (blockN / threadN).
int64_t gpuGemmThreads(const GpuMatMulSchedule &schedule);

/// Registers one thread may use when a block of `threads` is resident on one SM: the SM's
/// register file shared evenly, in ptxas's units of 8, at most the target's per-thread limit.
int64_t gpuRegisterBudget(int64_t threads, const codegen::GpuTarget &target);

/// Whether `schedule` is legal on `target` for a GEMM accumulating in `accumulate` (tiles may
/// be larger than the problem: the kernel guards its edges). The error names the field.
/// Whether splitK leaves every split K tiles depends on K: lowering checks that
/// (splitKProblem).
Expected<void> checkGpuGemmSchedule(const GpuMatMulSchedule &schedule, DType accumulate,
                                    const codegen::GpuTarget &target);

/// A good schedule without running anything: the block tile that best balances edge waste,
/// wave quantization over the SMs and operand reuse, a thread tile giving 64 to 256 threads,
/// blockK as large as shared memory allows up to 16, double buffering when K spans several
/// tiles, 16-byte vectors, and a K split when the tiles fill less than a wave (chooseSplitK).
GpuMatMulSchedule defaultGpuGemmSchedule(const GemmShape &shape,
                                         const codegen::GpuTarget &target);

/// The default first, then every legal combination of block tiles 32/64/128, square thread
/// tiles 2/4/8, blockK 8/16/32 and stages 1/2 (blocks of at least one warp), then K splits of
/// 2/4/8/16 of those whose tiles fill less than a wave, each split keeping 4 K tiles.
std::vector<GpuMatMulSchedule> gpuGemmScheduleSpace(const GemmShape &shape,
                                                    const codegen::GpuTarget &target);

} // namespace kiln::lower
