// The warpgroup products (kir::Wgmma) each warpgroup of a block has issued and not yet
// retired, with their commit groups. The simulator runs a product -- reads its shared
// operands and writes its accumulators -- only when a WgmmaSync Wait retires its group, the
// latest moment the hardware may; the machine also reports any write into an operand element
// of a product in flight (the hardware may read it at any time until the wait).
#pragma once

#include "ir/kernel/KernelIR.h"
#include "runtime/sim/CommitGroupQueues.h"

#include <cstdint>
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

/// Per warpgroup: wgmma.commit_group and wgmma.wait_group.
using WgmmaQueues = CommitGroupQueues<PendingWgmma>;

} // namespace kiln::sim
