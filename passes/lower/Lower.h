// Lowering: (fusion group, schedule) -> kernel IR.
#pragma once

#include "ir/graph/Graph.h"
#include "ir/kernel/KernelIR.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/Schedule.h"
#include "support/Error.h"

namespace kiln::lower {

/// A lowered group. The kernel's parameters are, in order: one buffer per
/// group input (group.inputs order), the output buffer, then `workspaces`
/// scratch buffers the executor allocates (e.g. packed GEMM panels).
struct LoweredKernel {
  kir::Kernel kernel;
  /// Kernels launched right after `kernel`, in order, on the same parameters (split-K's sum
  /// of the partial products): the group's output is complete when the last one ends.
  std::vector<kir::Kernel> followUps;
  int numInputs = 0;
  int numWorkspaces = 0;
};

/// Lowers one group (any kind but Alias and Constant, which need no kernel)
/// for the CPU. An op or dtype no kernel template covers is an error naming the node.
Expected<LoweredKernel> lowerGroupForCpu(const ir::Graph &graph, const passes::FusionGroup &group,
                                         const Schedule &schedule,
                                         const codegen::CpuTarget &target);

} // namespace kiln::lower
