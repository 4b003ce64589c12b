// The seeded randomness of the data pipeline: seeds derived from (seed, purpose,
// epoch, example) and unbiased bounded integers. Built on kiln::Rng (SplitMix64),
// so an epoch's order and a sample's augmentation are the same on every machine.
#pragma once

#include "support/HostTensor.h"

#include <cstdint>

namespace kiln::data {

/// What a derived seed is for, so the shuffle and the augmentation of the same
/// (seed, epoch) draw independent streams.
enum class SeedPurpose : uint64_t { Shuffle = 1, Augment = 2 };

/// A seed that depends only on its arguments: each one goes through a
/// SplitMix64 round, so nearby inputs give unrelated streams.
uint64_t deriveSeed(uint64_t seed, SeedPurpose purpose, uint64_t first, uint64_t second = 0);

/// Uniform in [0, bound) for bound >= 1, without modulo bias (draws above the
/// largest multiple of `bound` are rejected and redrawn).
uint64_t uniformBelow(Rng &rng, uint64_t bound);

} // namespace kiln::data
