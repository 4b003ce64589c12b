// Work each owner of a block (a thread's cp.async copies, a warpgroup's wgmma products) has
// issued and not yet retired, with its commit groups: a commit makes the owner's uncommitted
// work its newest group, and a wait retires the committed groups older than its `pending`
// newest ones. The simulator lands or runs the work only then, the latest moment the
// hardware may, so a kernel that touches it earlier is caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace kiln::sim {

/// `Pending` is the issued work; it carries `int64_t group`, set here at issue.
template <typename Pending> class CommitGroupQueues {
public:
  /// A fresh block of `owners` owners, with nothing in flight.
  void reset(int32_t owners) {
    queues_.assign(static_cast<size_t>(owners), {});
    commits_.assign(static_cast<size_t>(owners), 0);
  }

  void issue(int32_t owner, Pending work) {
    work.group = commits_[static_cast<size_t>(owner)];
    queues_[static_cast<size_t>(owner)].items.push_back(std::move(work));
  }

  /// The owner's uncommitted work becomes its newest group (a commit with none makes an empty
  /// group, as on the GPU).
  void commit(int32_t owner) { ++commits_[static_cast<size_t>(owner)]; }

  /// Retires (calls `retire(work)`, in issue order) and forgets the owner's work in committed
  /// groups older than its `pending` newest ones; uncommitted work stays in flight. Stops at
  /// the first `retire` that returns false.
  template <typename Retire> bool retire(int32_t owner, int64_t pending, Retire retire) {
    Queue &queue = queues_[static_cast<size_t>(owner)];
    const int64_t retiredBelow = commits_[static_cast<size_t>(owner)] - pending;
    // Groups grow in issue order, so the retired work is a prefix.
    while (queue.head < queue.items.size() && queue.items[queue.head].group < retiredBelow) {
      Pending work = std::move(queue.items[queue.head++]);
      if (!retire(work))
        return false;
    }
    if (queue.head == queue.items.size()) {
      queue.items.clear();
      queue.head = 0;
    }
    return true;
  }

  /// The first work in flight, in owner then issue order, for which `match(work)` holds
  /// (nullptr: none), and its owner.
  template <typename Match> const Pending *find(int32_t &owner, Match match) const {
    for (size_t o = 0; o < queues_.size(); ++o)
      for (size_t i = queues_[o].head; i < queues_[o].items.size(); ++i)
        if (match(queues_[o].items[i])) {
          owner = static_cast<int32_t>(o);
          return &queues_[o].items[i];
        }
    return nullptr;
  }

  /// The lowest owner with work in flight and its oldest work (nullptr: none).
  const Pending *firstInFlight(int32_t &owner) const {
    return find(owner, [](const Pending &) { return true; });
  }

  /// Whether `work` of `owner` is still waiting for a commit.
  bool uncommitted(int32_t owner, const Pending &work) const {
    return work.group >= commits_[static_cast<size_t>(owner)];
  }

private:
  /// One owner's work in issue order; the items before `head` have been retired.
  struct Queue {
    std::vector<Pending> items;
    size_t head = 0;
  };
  std::vector<Queue> queues_;    ///< per owner
  std::vector<int64_t> commits_; ///< per owner
};

} // namespace kiln::sim
