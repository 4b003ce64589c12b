// The SIMT simulator: runs a GPU kernel (kernel IR with block/thread loops) on
// the CPU with GPU semantics — a grid of blocks, the threads of a block in
// lockstep under active masks, shared memory per block, barriers, warp
// shuffles and atomics — and reports what real hardware would silently get
// wrong: out-of-bounds global and shared accesses, shared-memory races between
// barriers, a barrier reached by part of a block, a shuffle reached by part of
// a warp. It is how every GPU kernel is checked on machines without a GPU.
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
};

/// What a run did, for tests and `kiln run --target sim --profile`.
struct SimStats {
  int64_t blocks = 0;
  int64_t threadsPerBlock = 0;
  int64_t sharedBytesPerBlock = 0;
  int64_t barriers = 0;      ///< barrier executions, summed over blocks
  int64_t globalLoads = 0;   ///< active lanes that read global memory
  int64_t globalStores = 0;  ///< active lanes that wrote global memory (atomics included)
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
