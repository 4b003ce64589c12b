// The warpgroup products (kir::Wgmma) each warpgroup of a block has issued and not yet
// retired, with their commit groups. The simulator runs a product -- reads its shared
// operands and writes its accumulators -- only when a WgmmaSync Wait retires its group, the
// latest moment the hardware may; the machine also reports any write into an operand element
// of a product in flight (the hardware may read it at any time until the wait).
#pragma once

#include "ir/kernel/KernelIR.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace kiln::sim {

/// One product, the elements its operands read (mn-major: mn * k + kk) resolved when it was
/// issued.
struct PendingWgmma {
  const kir::Wgmma *product = nullptr;
  int aBuffer = -1, bBuffer = -1, dBuffer = -1; ///< program buffer indices
  std::vector<int64_t> aElements, bElements;
  int64_t group = 0; ///< the warpgroup's commits before it
};

class WgmmaQueues {
public:
  /// A fresh block of `warpgroups` warpgroups, with nothing in flight.
  void reset(int32_t warpgroups) {
    queues_.assign(static_cast<size_t>(warpgroups), {});
    commits_.assign(static_cast<size_t>(warpgroups), 0);
  }

  void issue(int32_t warpgroup, PendingWgmma product) {
    product.group = commits_[static_cast<size_t>(warpgroup)];
    queues_[static_cast<size_t>(warpgroup)].push_back(std::move(product));
  }

  /// wgmma.commit_group: the warpgroup's uncommitted products become its newest group.
  void commit(int32_t warpgroup) { ++commits_[static_cast<size_t>(warpgroup)]; }

  /// wgmma.wait_group `pending`: runs (`run(product)`, in issue order) and forgets every
  /// product of a committed group older than the warpgroup's `pending` newest ones. Stops at
  /// the first `run` that returns false.
  template <typename Run> bool retire(int32_t warpgroup, int64_t pending, Run run) {
    std::deque<PendingWgmma> &queue = queues_[static_cast<size_t>(warpgroup)];
    const int64_t retiredBelow = commits_[static_cast<size_t>(warpgroup)] - pending;
    while (!queue.empty() && queue.front().group < retiredBelow) {
      PendingWgmma product = queue.front();
      queue.pop_front();
      if (!run(product))
        return false;
    }
    return true;
  }

  /// A product still in flight (nullptr: none), and its warpgroup.
  const PendingWgmma *firstInFlight(int32_t &warpgroup) const {
    for (size_t w = 0; w < queues_.size(); ++w)
      if (!queues_[w].empty()) {
        warpgroup = static_cast<int32_t>(w);
        return &queues_[w].front();
      }
    return nullptr;
  }

  /// Whether `product` of `warpgroup` was never committed.
  bool uncommitted(int32_t warpgroup, const PendingWgmma &product) const {
    return product.group >= commits_[static_cast<size_t>(warpgroup)];
  }

private:
  std::vector<std::deque<PendingWgmma>> queues_;
  std::vector<int64_t> commits_;
};

} // namespace kiln::sim
