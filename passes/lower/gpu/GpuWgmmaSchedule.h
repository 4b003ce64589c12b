// Warpgroup tensor-core GEMM schedules (GpuMatMulSchedule with wgmma set): when a GEMM can run
// on wgmma.mma_async (sm_90a), which schedules are legal, a default and the space the
// autotuner searches. See docs/gpu-tensor-cores.md ("Warpgroup products").
#pragma once

#include "codegen/Target.h"
#include "ir/kernel/KernelIR.h"
#include "ir/kernel/WgmmaLayout.h"
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/GpuSchedule.h"
#include "support/Error.h"

#include <optional>
#include <vector>

namespace kiln::lower {

/// The warpgroup product a GEMM of `shape` can use on `target`: sm_90a, dense f16/bf16
/// operands (either way round), or f8e4m3 ones whose K is contiguous in both, accumulating
/// in f32. nullopt elsewhere (tf32 stays on mma.sync).
std::optional<kir::WgmmaKind> gpuWgmmaKindFor(const GemmShape &shape,
                                              const codegen::GpuTarget &target);

/// Whether a wgmma `schedule` is legal for `shape` on `target`; the error names the field.
/// A warpgroup tile is warpM (a multiple of 64) x warpN (8 .. 256; a multiple of 64 where B
/// is N-contiguous), blockK one 128-byte row of K, stages 2..4 in the SM's shared memory.
Expected<void> checkGpuWgmmaSchedule(const GpuMatMulSchedule &schedule, const GemmShape &shape,
                                     const codegen::GpuTarget &target);

/// The heuristic wgmma schedule (gpuWgmmaKindFor must hold): the block tile among 128x256,
/// 128x128, 128x64, 64x128 and 64x64, one warpgroup per 64 rows, and K split of least estimated time
/// (the estimate of the mma.sync default), as many stages (up to 4) as the shared memory and
/// the split's K tiles allow, and the grouped tile order on grids of two waves or more
/// (gemmGroupM).
GpuMatMulSchedule defaultGpuWgmmaSchedule(const GemmShape &shape,
                                          const codegen::GpuTarget &target);

/// Every legal wgmma schedule of the tuner's space: the default first, then block tiles
/// 64..256 x warpgroup tiles x stages 2..4, K splits where the tiles fill less than a wave, and
/// the default with the other tile order.
/// The default fed by bulk tensor copies (tma), for shapes with tmaOperands: the wgmma
/// default's tile whose consumers fit the registers a block of them plus the producer gets.
GpuMatMulSchedule defaultGpuTmaSchedule(const GemmShape &shape, const codegen::GpuTarget &target);

/// The f32 accumulators one thread of a warpgroup holds: warpM / 64 products of warpN / 2.
inline int64_t wgmmaAccumulators(const GpuMatMulSchedule &schedule) {
  return int64_t(schedule.warpM / kir::kWgmmaM) * schedule.warpN / 2;
}

/// A persistent schedule's grid: as many blocks as the target's SMs hold at once (by shared
/// memory, threads, registers and the per-SM block limit), at most one per output tile.
int64_t persistentGridBlocks(const GpuMatMulSchedule &schedule, DType operandDtype,
                             int64_t tiles, const codegen::GpuTarget &target);

std::vector<GpuMatMulSchedule> gpuWgmmaScheduleSpace(const GemmShape &shape,
                                                     const codegen::GpuTarget &target);

} // namespace kiln::lower
