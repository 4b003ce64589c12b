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
/// `tracePath` is set, writes the Chrome trace there. A profile that names no
/// device (host runs leave it empty) is labeled `target`, the compile
/// report's description of it. Returns an exit code.
int reportProfile(const CompiledModel &model, std::vector<runtime::RunProfile> profiles,
                  const std::string &target, const std::optional<std::string> &tracePath);

} // namespace kiln::tool
