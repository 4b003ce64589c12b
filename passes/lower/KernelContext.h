// The state one kernel's lowering reads and builds with on any target: the
// group, the kernel signature, the element function and fresh names. Each
// target's context (LowerContext, GpuLowerContext) adds its target.
#pragma once

#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/ElementEmitter.h"
#include "passes/lower/LowerUtil.h"
#include "passes/lower/RuntimeSizes.h"

#include <span>

namespace kiln::lower {

struct KernelContext {
  KernelContext(const ir::Graph &graph, const passes::FusionGroup &group)
      : graph(graph), group(group), signature(makeSignature(group)),
        emitter(group, signature.buffers), sizes(graph) {
    emitter.setRuntimeSizes(&sizes);
  }
  KernelContext(const KernelContext &) = delete;
  KernelContext &operator=(const KernelContext &) = delete;

  const ir::Graph &graph;
  const passes::FusionGroup &group;
  KernelSignature signature;
  ElementEmitter emitter;
  VarNames names;
  /// Extents of symbolic sizes, read at run time.
  RuntimeSizes sizes;

  const ir::Value *root() const { return group.root->result(); }
  /// Stores the root's element at `index` into the output buffer.
  Expected<kir::StmtPtr> storeRoot(std::span<const kir::ExprPtr> index) {
    KILN_TRY(kir::ExprPtr value, emitter.at(root(), index));
    return storeBound(signature.out, linearIndex(index, root()->type().shape), value, names);
  }
};

} // namespace kiln::lower
