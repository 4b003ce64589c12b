// The asynchronous copies (kir::AsyncCopy) each thread of a block has issued
// and not yet retired, with their commit groups: the simulator lands a copy
// in shared memory only when the thread's AsyncWait retires its group, so a
// kernel that reads the destination before waiting reads the old contents,
// and the machine can report it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::sim {

/// One thread's copy, read from global memory when it was issued.
struct PendingCopy {
  int buffer = -1;     ///< the shared destination (a program buffer index)
  int64_t index = 0;   ///< its first destination element
  int lanes = 0;
  bool zeroFill = false; ///< issued with a false predicate: lands zeros
  int64_t group = 0;   ///< the thread's commits before it: it joins group `group` at the next commit
  std::array<std::byte, 16> bytes{};
};

class AsyncCopyQueues {
public:
  /// A fresh block of `threads` threads, with nothing in flight.
  void reset(int32_t threads) {
    queues_.assign(static_cast<size_t>(threads), {});
    commits_.assign(static_cast<size_t>(threads), 0);
    inFlight_ = 0;
  }

  void issue(int32_t thread, PendingCopy copy) {
    copy.group = commits_[static_cast<size_t>(thread)];
    queues_[static_cast<size_t>(thread)].copies.push_back(copy);
    ++inFlight_;
  }

  /// cp.async.commit_group: the thread's uncommitted copies become its newest
  /// group (a commit with none makes an empty group, as on the GPU).
  void commit(int32_t thread) { ++commits_[static_cast<size_t>(thread)]; }

  /// cp.async.wait_group `pending`: lands (calls `land(copy)` in issue order)
  /// and forgets every copy of the thread in a committed group older than its
  /// `pending` newest ones. Uncommitted copies stay in flight. Stops at the
  /// first `land` that returns false.
  template <typename Land> bool retire(int32_t thread, int64_t pending, Land land) {
    Queue &queue = queues_[static_cast<size_t>(thread)];
    const int64_t retiredBelow = commits_[static_cast<size_t>(thread)] - pending;
    // Groups grow in issue order, so the retired copies are a prefix.
    while (queue.head < queue.copies.size() && queue.copies[queue.head].group < retiredBelow) {
      PendingCopy copy = queue.copies[queue.head++];
      --inFlight_;
      if (!land(copy))
        return false;
    }
    if (queue.head == queue.copies.size()) {
      queue.copies.clear();
      queue.head = 0;
    }
    return true;
  }

  bool empty() const { return inFlight_ == 0; }

  /// The lowest thread with a copy in flight and its oldest copy (nullptr: none).
  const PendingCopy *firstInFlight(int32_t &thread) const {
    for (size_t t = 0; t < queues_.size(); ++t)
      if (queues_[t].head < queues_[t].copies.size()) {
        thread = static_cast<int32_t>(t);
        return &queues_[t].copies[queues_[t].head];
      }
    return nullptr;
  }

  /// A copy in flight that writes element `element` of `buffer`, and its thread.
  const PendingCopy *findWriter(int buffer, int64_t element, int32_t &thread) const {
    for (size_t t = 0; t < queues_.size(); ++t)
      for (size_t i = queues_[t].head; i < queues_[t].copies.size(); ++i) {
        const PendingCopy &copy = queues_[t].copies[i];
        if (copy.buffer == buffer && element >= copy.index && element < copy.index + copy.lanes) {
          thread = static_cast<int32_t>(t);
          return &copy;
        }
      }
    return nullptr;
  }

  /// Whether the thread's copy is still waiting for a commit.
  bool uncommitted(int32_t thread, const PendingCopy &copy) const {
    return copy.group == commits_[static_cast<size_t>(thread)];
  }

private:
  /// One thread's copies in issue order; those before `head` have landed.
  struct Queue {
    std::vector<PendingCopy> copies;
    size_t head = 0;
  };
  std::vector<Queue> queues_;    ///< per thread
  std::vector<int64_t> commits_; ///< per thread
  int64_t inFlight_ = 0;
};

} // namespace kiln::sim
