// The state one GPU kernel's lowering reads and builds with: KernelContext,
// the GPU target and the kernel's shared buffers.
#pragma once

#include "codegen/Target.h"
#include "passes/lower/KernelContext.h"

namespace kiln::lower {

struct GpuLowerContext : KernelContext {
  GpuLowerContext(const ir::Graph &graph, const passes::FusionGroup &group,
                  const codegen::GpuTarget &target)
      : KernelContext(graph, group), target(target) {}

  const codegen::GpuTarget &target;
  /// Shared buffers of the kernel being built, allocated once per block around the thread nest.
  std::vector<kir::BufferPtr> shared;
};

} // namespace kiln::lower
