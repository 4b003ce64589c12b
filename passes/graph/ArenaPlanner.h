// Memory planning: places buffers with known lifetimes into one arena so that
// buffers alive at the same time never overlap, reusing space as lifetimes end.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kiln::passes {

/// A buffer live from step `first` to step `last` (inclusive, in launch order).
struct BufferLifetime {
  int64_t bytes = 0;
  int first = 0;
  int last = 0;
  /// Another buffer whose last use is this buffer's first step and whose
  /// space this one may take over (an elementwise kernel writing its output
  /// over its input); -1 for none. Honoured when it does not overlap a third buffer.
  int reuses = -1;
};

struct ArenaPlan {
  std::vector<int64_t> offsets; ///< one per buffer, multiples of the alignment
  int64_t arenaBytes = 0;       ///< the arena's size
  int64_t unplannedBytes = 0;   ///< the sum of all buffers, each aligned
};

/// Greedy by size: buffers (or in-place chains) are placed largest first at the
/// lowest offset that overlaps no placed buffer with an intersecting lifetime.
ArenaPlan planArena(std::span<const BufferLifetime> buffers, int64_t alignment = 64);

} // namespace kiln::passes
