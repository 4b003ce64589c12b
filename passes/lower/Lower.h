// Lowering: (fusion group, schedule, target) -> kernel IR. One entry point each
// for a group's default schedule, its schedule space and its lowering, for any
// target; each target's differences live in its lowering table
// (passes/lower/LoweringTable.h).
#pragma once

#include "codegen/Target.h"
#include "ir/graph/Graph.h"
#include "ir/kernel/KernelIR.h"
#include "passes/graph/Fusion.h"
#include "passes/kernel/Passes.h"
#include "passes/lower/Schedule.h"
#include "support/Error.h"

#include <optional>
#include <variant>
#include <vector>

namespace kiln::lower {

/// The machine kernels are lowered for.
using LoweringTarget = std::variant<codegen::CpuTarget, codegen::GpuTarget>;

/// A lowered group. The kernel's parameters are, in order: one buffer per
/// group input (group.inputs order), the output buffer, then `workspaces`
/// scratch buffers the executor allocates (e.g. packed GEMM panels).
struct LoweredKernel {
  kir::Kernel kernel;
  /// Kernels launched right after `kernel`, in order, on the same parameters (split-K's sum
  /// of the partial products): the group's output is complete when the last one ends.
  std::vector<kir::Kernel> followUps;
  /// A kernel launched right before `kernel` on the same parameters that reads only group
  /// input `preludeInput` and writes only workspace `preludeWorkspace` (a weight packed for
  /// the GEMM). Where that input depends on parameters alone, the launch plan keeps the
  /// workspace between runs and the prelude runs once per weight value.
  std::optional<kir::Kernel> prelude;
  int preludeInput = -1;
  int preludeWorkspace = -1;
  int numInputs = 0;
  int numWorkspaces = 0;
  /// Each kernel takes one more parameter, last: the graph's size symbols (RuntimeSizes.h).
  bool readsSizes = false;
};

/// A good schedule for `group` on `target` without running anything
/// (NoSchedule for groups without a kernel).
Schedule defaultSchedule(const ir::Graph &graph, const passes::FusionGroup &group,
                         const LoweringTarget &target);

/// Every legal schedule for `group` on `target`, the default first.
std::vector<Schedule> scheduleSpace(const ir::Graph &graph, const passes::FusionGroup &group,
                                    const LoweringTarget &target);

/// Lowers one group (any kind but Alias and Constant, which need no kernel)
/// for `target`. An op or dtype no kernel template of the target covers is an
/// error naming the node; a schedule of another kind or of another target an
/// InvalidArgument error naming the group. GPU kernels pass kir::gpuLaunchOf.
Expected<LoweredKernel> lowerGroup(const ir::Graph &graph, const passes::FusionGroup &group,
                                   const Schedule &schedule, const LoweringTarget &target);

/// lowerGroup, then the kernel passes (kir::runKernelPasses) on the kernel and
/// each follow-up: what a compile and the tuner run for one group. `verifyKernels`:
/// whether the kernel passes verify (CompileOptions::verifyKernels).
Expected<LoweredKernel> lowerGroupAndRunKernelPasses(
    const ir::Graph &graph, const passes::FusionGroup &group, const Schedule &schedule,
    const LoweringTarget &target, bool verifyKernels = kir::verifyKernelPassesEnabled());

/// The compute capability of a GPU target (sm_90a: 90); 0 for the CPU, which has
/// no tensor cores.
int gpuComputeCapability(const LoweringTarget &target);

} // namespace kiln::lower
