// The simulator's mbarriers and bulk tensor copies: each barrier's phase, the arrivals and
// bytes its current phase still expects, and the copies issued but not landed. A copy lands
// when a thread waits on its barrier (at the latest moment the hardware allows), so a read of
// its destination before that wait finds the elements still in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::sim {

struct MbarrierState {
  bool initialized = false;
  int64_t expected = 0; ///< arrivals per phase
  int64_t pending = 0;  ///< arrivals the current phase still expects
  int64_t tx = 0;       ///< bytes expected and not yet landed in the current phase
  int64_t phases = 0;   ///< completed phases (the current one's parity is phases & 1)
  int32_t initThread = -1;
  uint64_t initEpoch = 0; ///< the barrier interval of the init

  /// Starts the next phase once every arrival and byte of this one is in.
  void completeIfDone() {
    if (pending == 0 && tx == 0) {
      ++phases;
      pending = expected;
    }
  }
  /// Whether the phase of `parity` has completed: the current phase has the other parity.
  bool phaseDone(int64_t parity) const { return (phases & 1) != parity; }
};

/// A bulk tensor copy in flight: the box's bytes were read from global memory at issue.
struct PendingTma {
  int buffer = -1;                ///< the destination (program buffer index)
  std::vector<int64_t> elements;  ///< the destination element of each box element
  std::vector<std::byte> bytes;   ///< the box's contents, element after element
  int barrierBuffer = -1;
  int64_t barrier = 0;            ///< the element of barrierBuffer it completes on
  int64_t byteCount = 0;          ///< the whole box, zeros read outside the tensor included
  int32_t issuer = 0;
};

class MbarrierTracker {
public:
  void reset() { copies_.clear(); }
  void issue(PendingTma copy) { copies_.push_back(std::move(copy)); }
  /// Removes and returns the copies completing on element `barrier` of `barrierBuffer`.
  std::vector<PendingTma> takeCopiesOn(int barrierBuffer, int64_t barrier) {
    std::vector<PendingTma> taken, kept;
    for (PendingTma &copy : copies_)
      (copy.barrierBuffer == barrierBuffer && copy.barrier == barrier ? taken : kept)
          .push_back(std::move(copy));
    copies_ = std::move(kept);
    return taken;
  }
  /// The copy in flight into element `element` of `buffer`, or nullptr.
  const PendingTma *writerOf(int buffer, int64_t element) const {
    for (const PendingTma &copy : copies_)
      if (copy.buffer == buffer)
        for (int64_t e : copy.elements)
          if (e == element)
            return &copy;
    return nullptr;
  }
  const PendingTma *firstInFlight() const { return copies_.empty() ? nullptr : &copies_.front(); }

private:
  std::vector<PendingTma> copies_;
};

} // namespace kiln::sim
