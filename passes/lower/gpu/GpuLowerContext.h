// The state one GPU kernel's lowering reads and builds with (the GPU
// counterpart of LowerContext): the group, the target, the kernel signature,
// the element function and fresh names.
#pragma once

#include "codegen/Target.h"
#include "passes/lower/ElementEmitter.h"
#include "passes/lower/LowerUtil.h"

namespace kiln::lower {

struct GpuLowerContext {
  GpuLowerContext(const ir::Graph &graph, const passes::FusionGroup &group,
                  const codegen::GpuTarget &target)
      : graph(graph), group(group), target(target), signature(makeSignature(group)),
        emitter(group, signature.buffers) {}
  GpuLowerContext(const GpuLowerContext &) = delete;
  GpuLowerContext &operator=(const GpuLowerContext &) = delete;

  const ir::Graph &graph;
  const passes::FusionGroup &group;
  const codegen::GpuTarget &target;
  KernelSignature signature;
  ElementEmitter emitter;
  VarNames names;
  /// Shared buffers of the kernel being built, allocated once per block around the thread nest.
  std::vector<kir::BufferPtr> shared;

  const ir::Value *root() const { return group.root->result(); }
};

} // namespace kiln::lower
