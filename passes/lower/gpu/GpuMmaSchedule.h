// Tensor-core GEMM schedules (GpuMatMulSchedule with warpM > 0): when a GEMM can run on
// mma.sync, which schedules are legal, the heuristic default and the space the autotuner
// searches. See docs/gpu-tensor-cores.md.
#pragma once

#include "codegen/Target.h"
#include "ir/kernel/KernelIR.h"
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/GpuSchedule.h"
#include "support/Error.h"

#include <optional>
#include <vector>

namespace kiln::lower {

/// The warp matrix product a GEMM of `shape` uses on `target`, or nullopt when it runs on
/// CUDA cores: dense f16/bf16 operands (or f32 ones allowing tf32) accumulating in f32, on
/// sm_80 or later, whose contiguous runs hold whole 4-byte pairs at least.
std::optional<kir::MmaKind> gpuMmaKindFor(const GemmShape &shape, const codegen::GpuTarget &target);

/// Elements per async copy of one operand: the widest of 16, 8 and 4 bytes that divides the
/// operand's contiguous runs (0: none does).
int gpuMmaCopyLanes(int64_t run, DType dtype);

/// Static shared memory of one block: `stages` A and B tiles in the operand dtype.
int64_t gpuMmaSharedBytes(const GpuMatMulSchedule &schedule, DType operandDtype);

/// Threads per block: one warp per warpM x warpN tile.
int64_t gpuMmaThreads(const GpuMatMulSchedule &schedule);

/// Whether a tensor-core `schedule` is legal for `shape` on `target`; the error names the field.
Expected<void> checkGpuMmaSchedule(const GpuMatMulSchedule &schedule, const GemmShape &shape,
                                   const codegen::GpuTarget &target);

/// The heuristic tensor-core schedule (gpuMmaKindFor must hold): the block tile among
/// 128x128, 128x64, 64x128, 64x64, 64x32, 32x64, 32x32 that best balances edge waste, wave
/// quantization over the SMs and operand reuse; 64x64 warp tiles where the block allows
/// (smaller ones keep at least 4 warps); blockK 32 (64 bytes of a row per stage at 16 bits);
/// as many stages (up to 4) as static shared memory holds.
GpuMatMulSchedule defaultGpuMmaSchedule(const GemmShape &shape, const codegen::GpuTarget &target);

/// Every legal tensor-core schedule: block tiles 32..256 x warp tiles 16..64 x blockK 16/32/64
/// x stages 2..4, the default first.
std::vector<GpuMatMulSchedule> gpuMmaScheduleSpace(const GemmShape &shape,
                                                   const codegen::GpuTarget &target);

} // namespace kiln::lower
