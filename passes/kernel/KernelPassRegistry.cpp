// The table of kernel passes by name (passes/kernel/Passes.h has what each does).
#include "passes/kernel/KernelPassRegistry.h"
#include "passes/kernel/Passes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kiln::kir {

namespace {
Kernel runHoist(Kernel kernel) { return hoistLoopInvariants(std::move(kernel)); }

std::string_view trimmed(std::string_view text) {
  size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos)
    return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}
} // namespace

const std::vector<KernelPassInfo> &kernelPasses() {
  static const std::vector<KernelPassInfo> passes = {
      {"hoist", "loop-invariant code motion out of host loops (GPU-bound loops stay)", runHoist},
      {"kernel-pipeline", "the default kernel pipeline every lowered kernel runs (runKernelPasses)",
       runKernelPasses},
      {"simplify", "constant folding, index algebra and dead control flow, to a fixed point",
       simplifyKernel},
  };
  return passes;
}

Expected<std::vector<const KernelPassInfo *>> kernelPassPipeline(std::string_view names) {
  std::vector<const KernelPassInfo *> pipeline;
  size_t start = 0;
  while (start <= names.size()) {
    size_t comma = std::min(names.find(',', start), names.size());
    std::string_view name = trimmed(names.substr(start, comma - start));
    const KernelPassInfo *found = nullptr;
    for (const KernelPassInfo &pass : kernelPasses())
      if (pass.name == name)
        found = &pass;
    if (!found) {
      std::vector<std::string_view> known;
      for (const KernelPassInfo &pass : kernelPasses())
        known.push_back(pass.name);
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("unknown kernel pass '{}' (kernel passes: {})", name,
                                   fmt::join(known, ", ")));
    }
    pipeline.push_back(found);
    start = comma + 1;
  }
  return pipeline;
}

} // namespace kiln::kir
