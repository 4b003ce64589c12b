// The per-kind GPU lowerings behind the GPU lowering table, and the pieces they
// share: the block/thread launch nest and the combination of per-thread
// partial accumulators across the threads of a row.
#pragma once

#include "passes/lower/GpuSchedule.h"
#include "passes/lower/LowerKinds.h"
#include "passes/lower/gpu/GpuLowerContext.h"

#include <functional>
#include <set>

namespace kiln::lower {

/// The body of the kernel of each kind (the whole kernel: block and thread loops included).
Expected<kir::StmtPtr> lowerGpuPointwise(GpuLowerContext &cx, const GpuPointwiseSchedule &schedule);
Expected<kir::StmtPtr> lowerGpuTranspose(GpuLowerContext &cx, const GpuTransposeSchedule &schedule);
Expected<kir::StmtPtr> lowerGpuReduction(GpuLowerContext &cx, const GpuReductionSchedule &schedule);
Expected<kir::StmtPtr> lowerGpuRowNorm(GpuLowerContext &cx, const GpuRowNormSchedule &schedule);
Expected<kir::StmtPtr> lowerGpuPooling(GpuLowerContext &cx, const GpuPoolingSchedule &schedule);

/// Checks a GPU schedule's fields against the group and the target: an
/// InvalidArgument error naming the group and the field, or nothing.
Expected<void> checkGpuSchedule(const passes::FusionGroup &group, const Schedule &schedule,
                                const codegen::GpuTarget &target);

// ---- the launch nest

/// The loop variables one thread sees.
struct GpuThread {
  kir::ExprPtr block;    ///< blockIdx.x
  kir::ExprPtr x, y;     ///< threadIdx.x, threadIdx.y (0 without a y axis)
  int64_t threadsX = 1, threadsY = 1;
  /// The thread's lane in its warp (i32): its linear index (x fastest) mod 32.
  kir::ExprPtr lane() const;
  /// x + y * threadsX.
  kir::ExprPtr linear() const;
};

using ThreadBodyFn = std::function<Expected<kir::StmtPtr>(const GpuThread &)>;

/// for block.x in [0, blocks): <shared allocations>: for thread.y: for thread.x: body.
/// The body may add shared buffers to `shared` while it is built; they are
/// allocated once per block around the thread nest.
Expected<kir::StmtPtr> gpuNest(GpuLowerContext &cx, int64_t blocks, int64_t threadsX,
                               int64_t threadsY, const ThreadBodyFn &body);

/// A shared buffer of the kernel being built (allocated by gpuNest).
kir::BufferPtr sharedBuffer(GpuLowerContext &cx, const std::string &prefix, DType dtype,
                            int64_t size);

// ---- per-thread accumulators

/// Register buffers holding one accumulator state per thread.
struct RegisterState {
  std::vector<kir::BufferPtr> buffers;
  State load() const;
  kir::StmtPtr store(const State &state, VarNames &names) const;
  /// Wraps `body` in the buffers' allocations.
  kir::StmtPtr allocateAround(kir::StmtPtr body) const;
};
RegisterState registerState(VarNames &names, const std::string &prefix,
                            const std::vector<kir::Type> &types);

/// Combines the partial states of the `width` threads of a row (consecutive
/// x threads, `width` a power of two; rows are the y threads) with
/// spec.merge, the lower thread's state first: warp shuffles within a warp,
/// then shared memory across the row's warps. Must be reached by every thread
/// of the block (it may contain a barrier and shuffles). `then` gets the
/// row's result: in every thread of the row when `everyThread`, else only in
/// the row's first thread (x == 0), which saves the broadcast.
Expected<kir::StmtPtr> reduceAcrossRow(GpuLowerContext &cx, const GpuThread &thread,
                                       const AccumulatorSpec &spec, State partial,
                                       const ResultFn &then, bool everyThread = true);

/// A threads-per-row split of a row-parallel schedule: a power of two that is
/// at most 32 or a multiple of 32, dividing threadsPerBlock; or an
/// InvalidArgument error naming the group and the field.
Expected<int64_t> threadsPerRow(const passes::FusionGroup &group, int threadsPerBlock,
                                int rowsPerBlock, const codegen::GpuTarget &target);

// ---- vector reads

/// The group inputs read only through elementwise ops (broadcasting over
/// leading axes at most, never along the innermost axis) up to `target` (the
/// root, or a reduction's operand), so `target`'s elements [..., j + l] read
/// the input at [..., j + l] of its broadcast index: lane l of a vector of
/// `target` elements reads lane l of one vector load of the input. `target`
/// itself counts when it is a group input.
std::set<const ir::Value *> vectorReadInputs(const passes::FusionGroup &group,
                                             const ir::Value *target);

/// The index a broadcasting read of a value of `shape` takes at `index` (an
/// index of a value of higher or equal rank).
std::vector<kir::ExprPtr> broadcastIndex(std::span<const kir::ExprPtr> index, const ir::Shape &shape);

/// The smallest power of two >= n (1 for n <= 1).
int64_t nextPowerOfTwo(int64_t n);

} // namespace kiln::lower
