// Seeded per-epoch permutations.
#include "frontend/data/EpochOrder.h"

#include "frontend/data/DataRandom.h"

#include <numeric>
#include <utility>

namespace kiln::data {

std::vector<int64_t> epochOrder(int64_t count, uint64_t seed, int64_t epoch, bool shuffle) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!shuffle)
    return order;
  // std::shuffle's algorithm is unspecified across standard libraries; this
  // loop is the same everywhere.
  Rng rng(deriveSeed(seed, SeedPurpose::Shuffle, static_cast<uint64_t>(epoch)));
  for (int64_t i = count - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(uniformBelow(rng, static_cast<uint64_t>(i) + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

} // namespace kiln::data
