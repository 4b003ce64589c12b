// What `kiln train --profile[=FILE]` adds after training: the training
// programs' kernel time, the all-reduce time the kernels hid, and the Chrome
// trace of every run (docs/profiling.md, "Training").
#pragma once

#include "runtime/Profile.h"
#include "support/Error.h"

#include <optional>
#include <span>
#include <string>

namespace kiln::tool {

/// The lines to print for `runs` (every run of the training programs, in
/// order); with `tracePath`, writes their Chrome trace there first.
Expected<std::string> trainingProfileReport(std::span<const runtime::RunProfile> runs,
                                            const std::optional<std::string> &tracePath);

} // namespace kiln::tool
