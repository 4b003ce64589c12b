// The order in which one epoch visits a data set's examples.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::data {

/// The indices 0..count-1 in the order epoch `epoch` visits them: a
/// Fisher-Yates shuffle driven by a generator seeded from (seed, epoch) only,
/// so resuming training at epoch e reproduces e's order without replaying the
/// epochs before it. With `shuffle` false, the identity order.
std::vector<int64_t> epochOrder(int64_t count, uint64_t seed, int64_t epoch, bool shuffle = true);

} // namespace kiln::data
