// The memory behind one buffer during a simulation: its bytes (the caller's
// for parameters, owned storage for shared, local and register buffers), which
// elements have been written, who touched each shared element since the last
// barrier, and how many async copies into each element are in flight.
#pragma once

#include "ir/kernel/KernelIR.h"
#include "runtime/sim/MbarrierTracker.h"
#include "runtime/sim/SharedRaceLog.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::sim {

/// The memory behind one buffer while it is live.
struct SimMemory {
  const kir::Buffer *buffer = nullptr;
  std::byte *data = nullptr;
  int64_t size = 0; ///< elements (per thread for local and register buffers)
  int64_t elementBytes = 1;
  bool bound = false;
  bool perThread = false;   ///< local/register: thread t owns [t * size, (t + 1) * size)
  bool trackWrites = false; ///< report reads of elements nobody wrote
  bool trackRaces = false;
  std::vector<std::byte> storage;
  std::vector<uint8_t> written;
  SharedRaceLog races;
  std::vector<uint32_t> inFlight; ///< per element: async copies not yet landed (empty if
                                  ///< no AsyncCopy writes the buffer)
  std::vector<uint32_t> wgmmaReaders; ///< per element: issued wgmma products not yet retired
                                      ///< that read it (empty until a product reads the buffer)
  /// Wgmma operands and accumulators: per element, the writing thread's count of the fence a
  /// product needs (wgmma_shared_fence, wgmma_fence) when it last wrote it by a store, a
  /// landed async copy or an atomic (-1: no such write); and, shared, which thread that was.
  std::vector<int64_t> fencesAtWrite;
  std::vector<int32_t> writer;
  std::vector<MbarrierState> mbarriers; ///< per element of a buffer of mbarriers (else empty)
};

/// Poisons a fresh allocation (NaN for floats, -1 for integers: reads of
/// unwritten elements are reported anyway, the poison only makes a missed
/// report visible) and forgets who wrote what.
inline void resetAllocation(SimMemory &memory) {
  std::ranges::fill(memory.storage, std::byte{0xFF});
  std::ranges::fill(memory.written, uint8_t{0});
  std::ranges::fill(memory.inFlight, uint32_t{0});
  std::ranges::fill(memory.wgmmaReaders, uint32_t{0});
  std::ranges::fill(memory.fencesAtWrite, int64_t{-1});
  std::ranges::fill(memory.writer, int32_t{-1});
  std::ranges::fill(memory.mbarriers, MbarrierState{});
  if (memory.trackRaces)
    memory.races.reset(static_cast<int64_t>(memory.written.size()));
}

} // namespace kiln::sim
