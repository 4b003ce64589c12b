// What `kiln run --profile` adds after a run: the peak to compare against,
// the per-kernel table and the Chrome trace.
#pragma once

#include "runtime/CompiledModel.h"
#include "runtime/Profile.h"

#include <optional>
#include <string>
#include <vector>

namespace kiln::tool {

/// Prints the profile table of `profiles` (runs of `model`) and, when
/// `tracePath` is set, writes the Chrome trace there. Returns an exit code.
int reportProfile(const CompiledModel &model, const std::vector<runtime::RunProfile> &profiles,
                  const std::optional<std::string> &tracePath);

} // namespace kiln::tool
