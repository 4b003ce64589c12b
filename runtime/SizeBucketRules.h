// What makes a plan a size bucket of a symbolic plan (docs/dynamic-shapes.md, decision 13):
// checked where a bucket joins a model, whether the compiler made it or a bundle carried it.
#pragma once

#include "runtime/LaunchPlan.h"
#include "support/Error.h"

#include <cstdint>
#include <span>
#include <vector>

namespace kiln::runtime {

/// A bucket as stored: its plan and the largest value of each size symbol it runs.
struct SizeBucketPlan {
  std::vector<int64_t> upperBounds;
  LaunchPlan plan;
};

/// Whether `bucket` runs every size of symbolic plan `model` up to `upperBounds` (one per
/// symbol, in its range) on the tensors `model` checked: the same inputs, outputs and
/// parameters in the same order, parameters of the same types (a bucket reads the model's
/// values in place), inputs and outputs of the same sizes, and its symbols `model`'s narrowed to
/// [min, bound]; or, a bucket of one size (every bound its symbol's least value), no symbols
/// and the sizes at those values. The error says what differs.
Expected<void> checkSizeBucket(const LaunchPlan &model, std::span<const int64_t> upperBounds,
                               const LaunchPlan &bucket);

} // namespace kiln::runtime
