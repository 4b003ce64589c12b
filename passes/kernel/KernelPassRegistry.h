// The kernel IR passes by name, in one table: what `kiln-opt --passes=` runs on
// kernel IR text and what `kiln-opt --list-passes` shows for it.
#pragma once

#include "ir/kernel/KernelIR.h"

#include "support/Error.h"

#include <string_view>
#include <vector>

namespace kiln::kir {

/// A kernel pass as a pipeline names it.
struct KernelPassInfo {
  std::string_view name;        ///< kebab-case: "simplify", "hoist", "kernel-pipeline"
  std::string_view description; ///< one line
  Kernel (*run)(Kernel kernel);
};

/// Every kernel pass, sorted by name.
const std::vector<KernelPassInfo> &kernelPasses();

/// The passes a comma-separated list names, in order, or an error naming an unknown one
/// and listing the known names.
Expected<std::vector<const KernelPassInfo *>> kernelPassPipeline(std::string_view names);

} // namespace kiln::kir
