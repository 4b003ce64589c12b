// Seeded tensors for a loaded plan's inputs or unbound parameters, so a bundle
// can be run with nothing but kiln_rt (kiln run model.kiln, kiln-run-bundle).
#pragma once

#include "runtime/LaunchPlan.h"
#include "support/HostTensor.h"

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace kiln::runtime::bundle {

/// A tensor per binding (skipping names in `skip`), of its buffer's type:
/// normal floats, integers in [0, 10) (valid indices for any gather over 10 or
/// more rows), random bools; all zeros when `zeros`. A symbolic plan's tensors take their
/// sizes at `sizes` (a value per size symbol, each in its range), or the largest when empty.
NamedTensors sampleTensors(const LaunchPlan &plan, const std::vector<PlanBinding> &bindings,
                           uint64_t seed, bool zeros = false,
                           const std::set<std::string> &skip = {},
                           std::span<const int64_t> sizes = {});

/// One line per output: "name: f32[2, 10] = v0 v1 ... (min, max, mean)".
std::string summarizeTensor(const std::string &name, const HostTensor &tensor);

} // namespace kiln::runtime::bundle
