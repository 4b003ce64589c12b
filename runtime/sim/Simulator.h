// The SIMT simulator: runs a GPU kernel (kernel IR with block/thread loops) on
// the CPU with GPU semantics — a grid of blocks, the threads of a block in
// lockstep under active masks, shared memory per block, barriers, warp
// shuffles, atomics, tensor-core mma and ldmatrix, and asynchronous copies —
// and reports what real hardware would silently get wrong: out-of-bounds
// global and shared accesses, shared-memory races between barriers, a barrier
// reached by part of a block, a shuffle, mma or ldmatrix reached by part of a
// warp, a read of an async copy's destination before the copy was waited for.
// It is how every GPU kernel is checked on machines without a GPU.
//
// What a kernel must do to pass (GPU lowering follows these rules):
// - Threads run statement by statement in lockstep, the whole block at once,
//   so "warp-synchronous" code that shares data through shared memory without
//   a barrier is reported as a race even within one warp: kiln requires a
//   Barrier between a shared write and another thread's access (shuffles need
//   none). Races on global memory are not checked.
// - Shared memory starts poisoned in every block; reading an element no thread
//   of the block has written is an error, as is reading a local/register
//   element the thread has not written.
// - A vector load/store (lanes > 1) of global or shared memory starts at an
//   element index that is a multiple of its lane count (backends emit aligned
//   vector accesses); local/register buffers have no such rule.
// - Barriers are reached by every thread of the block, shuffles by all 32
//   lanes of a whole warp (a block whose size is not a multiple of 32 may not
//   shuffle in its last warp).
// - Lets and loads outside the thread loops run once per thread (counted so in
//   SimStats). Atomics land in linear thread order (x fastest), blocks run in
//   order of the block loops.
// - Mma and LdMatrix are warp collectives like shuffles (whole, fully active
//   warps). Mma places the lanes' fragments by kir::mmaFragmentPosition and
//   sums in a fixed f32 order (runtime/sim/SimTensorCore.h); reading a
//   fragment element the thread never wrote is an error. LdMatrix rows are in
//   bounds and 16-byte aligned (a multiple of 8 elements); each element is a
//   shared read by the lane that receives it (race and poison checks).
// - AsyncCopy reads its global source when issued (nothing under a false
//   predicate) and writes its shared destination (data or zeros) only when an
//   AsyncWait of the issuing thread retires its commit group: then the stores
//   are that thread's, race-checked at that moment. AsyncWait(n) retires all
//   but the thread's n newest committed groups; copies not yet committed stay
//   in flight, and a barrier retires nothing. Touching an element while a copy
//   into it is in flight, and ending a block with a copy in flight, are errors.
// - Mbarriers and bulk tensor copies (TmaLoad): a copy reads its box when
//   issued and lands when a wait on its barrier looks; the two sides of a
//   branch that waits on mbarriers run as fibers that hand over at waits and at
//   arrives completing a phase (docs/gpu-codegen.md), and a block whose fibers
//   all wait is reported as a deadlock.
#pragma once

#include "ir/kernel/KernelIR.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <cstddef>
#include <cstdint>
#include <span>

namespace kiln::sim {

struct SimOptions {
  /// Report two threads touching one shared element between barriers when at
  /// least one of them writes (reads by many threads are fine).
  bool checkSharedRaces = true;
  /// Stop with an error after this many statement executions per block (a
  /// runaway loop in a broken kernel).
  int64_t maxStepsPerBlock = int64_t{1} << 32;
  /// The largest block accepted (the launch shape is read by kir::gpuLaunchOf).
  int64_t maxThreadsPerBlock = 1024;
};

/// What a run did, for tests and `kiln run --target sim --profile`.
struct SimStats {
  int64_t blocks = 0;
  int64_t threadsPerBlock = 0;
  int64_t sharedBytesPerBlock = 0;
  int64_t barriers = 0;      ///< barrier executions, summed over blocks
  int64_t globalLoads = 0;   ///< active lanes that read global memory
  int64_t globalStores = 0;  ///< active lanes that wrote global memory (atomics included)
  int64_t sharedLoads = 0;   ///< active lanes that read shared memory
  int64_t sharedStores = 0;  ///< active lanes that wrote shared memory (atomics included)
  int64_t atomics = 0;       ///< threads that executed an atomic (global or shared)
  int64_t shuffles = 0;      ///< warp shuffles, counted once per warp
  int64_t mmas = 0;          ///< warp matrix products (Mma), counted once per warp
  int64_t asyncCopies = 0;   ///< threads that issued an async copy (predicated off included)
  int64_t bulkCopies = 0;    ///< bulk tensor copies (TmaLoad) issued, one per issuing thread
  int64_t forkedBranches = 0; ///< branches whose sides ran as fibers (producer and consumers)
  int64_t statements = 0;    ///< statement executions (each for all its active threads)
  int64_t threadStatements = 0; ///< statement executions times their active threads
};

/// Runs `kernel` over raw parameter bytes (one span per kernel parameter,
/// exactly size * dtypeByteSize bytes each). Errors start "kernel <name>: " and
/// name the buffer, the element index and the threads (block and thread
/// coordinates) at fault.
Expected<SimStats> simulateKernel(const kir::Kernel &kernel,
                                  std::span<const std::span<std::byte>> params,
                                  const SimOptions &options = {});

/// The same over HostTensors, one per parameter with its dtype and element count.
Expected<SimStats> simulateKernel(const kir::Kernel &kernel, std::span<HostTensor> params,
                                  const SimOptions &options = {});

} // namespace kiln::sim
