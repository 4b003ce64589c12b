// Seed derivation and bounded integers for the data pipeline.
#include "frontend/data/DataRandom.h"

#include <limits>

namespace kiln::data {

namespace {

/// One SplitMix64 output for state `x`: a bijective, well-mixed hash.
uint64_t mix(uint64_t x) { return Rng(x).nextU64(); }

} // namespace

uint64_t deriveSeed(uint64_t seed, SeedPurpose purpose, uint64_t first, uint64_t second) {
  uint64_t h = mix(seed ^ static_cast<uint64_t>(purpose));
  h = mix(h ^ first);
  return mix(h ^ second);
}

uint64_t uniformBelow(Rng &rng, uint64_t bound) {
  KILN_CHECK(bound >= 1, "uniformBelow needs a bound of at least 1");
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  // 2^64 mod bound: the draws above kMax - excess would make the low residues
  // more likely, so they are redrawn (fewer than one in 2^32 for bound < 2^32).
  uint64_t excess = (kMax % bound + 1) % bound;
  uint64_t draw = rng.nextU64();
  while (excess != 0 && draw > kMax - excess)
    draw = rng.nextU64();
  return draw % bound;
}

} // namespace kiln::data
