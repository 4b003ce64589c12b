// Tensor-core GEMM schedules (GpuMatMulSchedule with warpM > 0): when a GEMM can run on
// mma.sync, which schedules are legal, the heuristic default and the space the autotuner
// searches. See docs/gpu-tensor-cores.md.
#pragma once

#include "codegen/Target.h"
#include "ir/kernel/KernelIR.h"
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/GpuSchedule.h"
#include "support/Error.h"

#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <string>
#include <vector>

namespace kiln::lower {

/// The warp matrix product a GEMM of `shape` uses on `target`, or nullopt when it runs on
/// CUDA cores: dense f16/bf16 operands (or f32 ones allowing tf32) on sm_80 or later, or
/// f8e4m3 ones on sm_89 or later, accumulating in f32, whose contiguous runs split into
/// 4-byte copies.
std::optional<kir::MmaKind> gpuMmaKindFor(const GemmShape &shape, const codegen::GpuTarget &target);

/// Elements per async copy of one operand: the widest of 16, 8 and 4 bytes that divides the
/// operand's contiguous runs (0: none does).
int gpuMmaCopyLanes(int64_t run, DType dtype);

/// Static shared memory of one block: `stages` A and B tiles in the operand dtype.
int64_t gpuMmaSharedBytes(const GpuMatMulSchedule &schedule, DType operandDtype);

/// Blocks of the grid before any K split.
int64_t gemmOutputBlocks(const GpuMatMulSchedule &schedule, const GemmShape &shape);

/// The default's estimate (GemmSplitK.h) in K tiles of a 128 x 128 block: a block tile's K
/// tile costs (blockM + blockN) / 256 of that, its shared-memory traffic per multiply-add
/// growing as operand reuse falls.
double estimatedGemmTime(const GpuMatMulSchedule &schedule, const GemmShape &shape,
                         int64_t numSms);

/// Threads per block: one warp (wgmma: one warpgroup of 128 threads) per warpM x warpN tile.
int64_t gpuMmaThreads(const GpuMatMulSchedule &schedule);

/// The rules both tensor-core templates share (copies of 4, 8 or 16 bytes of `dtype`, 2-4
/// stages, groupM >= 1, a legal split, the target's threads per block): the first broken, or
/// nullopt.
std::optional<std::string> pipelineProblem(const GpuMatMulSchedule &schedule,
                                           const GemmShape &shape,
                                           const codegen::GpuTarget &target, DType dtype);

/// Registers a tensor-core thread needs beyond what it holds (accumulators, fragments):
/// addressing, loop counters, descriptors. Measured, see registerFileProblem.
inline constexpr int64_t kTensorCoreAddressingRegisters = 32;

/// The register file rule both tensor-core templates share: a thread's `heldRegisters`
/// (accumulators, and fragments for mma.sync) plus what addressing takes must fit what a block
/// of the schedule's threads may use, or ptxas spills (or, for wgmma, gives up). nullopt when
/// it fits.
std::optional<std::string> registerFileProblem(const GpuMatMulSchedule &schedule,
                                               int64_t heldRegisters,
                                               const codegen::GpuTarget &target);

/// Whether a tensor-core `schedule` is legal for `shape` on `target`; the error names the field.
Expected<void> checkGpuMmaSchedule(const GpuMatMulSchedule &schedule, const GemmShape &shape,
                                   const codegen::GpuTarget &target);

/// The heuristic tensor-core schedule (gpuMmaKindFor must hold): the block tile among
/// 128x128, 128x64, 64x128, 64x64, 64x32, 32x64, 32x32 and the K split (1, or 2..16 when the
/// tiles fill less than one wave of the SMs and each split keeps 4 K tiles) of least estimated
/// time -- full waves of blocks, each running its split's K tiles at a cost per tile that
/// grows as operand reuse falls, plus a split's second launch and partial sums; four warps,
/// each a quarter of the block; blockK of 64 bytes of a row; as many stages (up to 4) as the
/// split's K tiles and static shared memory allow.
GpuMatMulSchedule defaultGpuMmaSchedule(const GemmShape &shape, const codegen::GpuTarget &target);

/// Of `base` with each block tile of `tiles` (then `withTile`, which sets what follows from the
/// tile) and each K split 1..16, the schedule of least estimated time (estimatedGemmTime; ties:
/// the earlier tile, fewer splits) that `legal` accepts. A split is considered only when the
/// output tiles fill less than one wave and each split keeps kMinTilesPerSplit K tiles.
/// nullopt when no candidate is legal. Both tensor-core defaults choose so.
std::optional<GpuMatMulSchedule>
leastEstimatedTile(const GpuMatMulSchedule &base, std::span<const std::pair<int, int>> tiles,
                   const std::function<void(GpuMatMulSchedule &)> &withTile,
                   const std::function<bool(const GpuMatMulSchedule &)> &legal,
                   const GemmShape &shape, const codegen::GpuTarget &target);

/// `schedule` with the most stages, up to 4, that its split's K tiles fill and `fits` accepts;
/// `schedule` itself when no deeper one does.
GpuMatMulSchedule deepestStages(const GpuMatMulSchedule &schedule, const GemmShape &shape,
                                const std::function<bool(const GpuMatMulSchedule &)> &fits);

/// Rows of tiles per group of the grouped tile order (GemmGrid.h) where it is used.
inline constexpr int64_t kTileGroupRows = 8;

/// The tile order for `schedule`: groups of kTileGroupRows rows of tiles when the grid has at
/// least two waves of blocks and more rows of tiles than a group, else 1 (row by row).
int64_t gemmGroupM(const GpuMatMulSchedule &schedule, const GemmShape &shape,
                   const codegen::GpuTarget &target);

/// Appends to `space` its first schedule with the other tile order (grouped or row by row),
/// where the grid is large enough for the grouped order to apply.
void addGroupedSchedule(std::vector<GpuMatMulSchedule> &space, const GemmShape &shape,
                        const codegen::GpuTarget &target);

/// Appends to `space` the K splits (2, 4, 8, 16) of its unsplit schedules whose output tiles
/// fill less than one wave of the SMs: up to two waves of blocks, each split keeping
/// kMinTilesPerSplit K tiles, `legal` (the template's rule) and other than `first`. Both GPU
/// templates' spaces take their splits so.
void addSplitKSchedules(std::vector<GpuMatMulSchedule> &space, const GpuMatMulSchedule &first,
                        const GemmShape &shape, const codegen::GpuTarget &target,
                        const std::function<bool(const GpuMatMulSchedule &)> &legal);

/// Every legal tensor-core schedule: block tiles 32..256 x warp tiles 16..64 x blockK 16/32/64
/// x stages 2..4, the default first; for those whose output tiles fill less than one wave,
/// also K splits of 2, 4, 8 and 16 up to two waves of blocks; then, on sm_90a, the wgmma
/// schedules (gpuWgmmaScheduleSpace).
std::vector<GpuMatMulSchedule> gpuMmaScheduleSpace(const GemmShape &shape,
                                                   const codegen::GpuTarget &target);

} // namespace kiln::lower
