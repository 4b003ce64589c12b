// The launch plan and named tensors as bundle sections: binary encoding,
// strict decoding, and the checks that make a decoded plan safe to run
// (every index in range, every buffer inside its storage).
#pragma once

#include "runtime/Device.h"
#include "runtime/LaunchPlan.h"
#include "runtime/SizeBucketRules.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime::bundle {

/// A launch plan as stored: the steps' kernel entries are empty (a loader
/// binds them by kernel name), and a GPU plan has each step's launch dims.
struct StoredPlan {
  LaunchPlan plan;
  std::vector<std::optional<LaunchDims>> stepDims; ///< one per step; nullopt on the CPU
};

/// `stepDims` is empty for a host plan, else one entry per step.
std::string encodePlan(const LaunchPlan &plan, const std::vector<LaunchDims> &stepDims = {});

/// Decodes and validates a plan section (FormatError naming `section` and what
/// is wrong). `requireDims`: every step must carry launch dims (a GPU plan).
Expected<StoredPlan> decodePlan(std::string_view bytes, std::string_view section,
                                bool requireDims);

/// Size buckets (each: its upper bounds and its host plan).
std::string encodeSizeBuckets(const std::vector<SizeBucketPlan> &buckets);
/// Decodes and validates each bucket's plan; checkSizeBucket is the loader's.
Expected<std::vector<SizeBucketPlan>> decodeSizeBuckets(std::string_view bytes,
                                                        std::string_view section);

/// Named tensors (sorted by name, each: name, dtype, shape, bytes).
std::string encodeTensors(const NamedTensors &tensors);
Expected<NamedTensors> decodeTensors(std::string_view bytes, std::string_view section);

/// The checks decodePlan applies, for plans from anywhere.
Expected<void> validatePlan(const LaunchPlan &plan);

} // namespace kiln::runtime::bundle
