// The asynchronous copies (kir::AsyncCopy) each thread of a block has issued and not yet
// retired, with their commit groups: the simulator lands a copy in shared memory only when the
// thread's AsyncWait retires its group, so a kernel that reads the destination before waiting
// reads the old contents, and the machine can report it.
#pragma once

#include "runtime/sim/CommitGroupQueues.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace kiln::sim {

/// One thread's copy, read from global memory when it was issued.
struct PendingCopy {
  int buffer = -1;     ///< the shared destination (a program buffer index)
  int64_t index = 0;   ///< its first destination element
  int lanes = 0;
  bool zeroFill = false; ///< issued with a false predicate: lands zeros
  int64_t group = 0;   ///< the thread's commits before it: it joins group `group` at the next commit
  std::array<std::byte, 16> bytes{};

  bool writes(int destination, int64_t element) const {
    return destination == buffer && element >= index && element < index + lanes;
  }
};

/// Per thread: cp.async.commit_group and cp.async.wait_group.
using AsyncCopyQueues = CommitGroupQueues<PendingCopy>;

} // namespace kiln::sim
