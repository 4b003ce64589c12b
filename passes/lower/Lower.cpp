// The lowering entry points: look the group's kind up in the target's lowering
// table (LoweringTable.h) and run its entry.
#include "passes/lower/Lower.h"

#include "passes/kernel/Passes.h"
#include "passes/lower/LowerUtil.h"
#include "passes/lower/LoweringTable.h"
#include "passes/lower/RuntimeSizes.h"

namespace kiln::lower {

namespace {

const KindLowering<codegen::CpuTarget> *kindLowering(const codegen::CpuTarget &,
                                                     passes::GroupKind kind) {
  return cpuKindLowering(kind);
}
const KindLowering<codegen::GpuTarget> *kindLowering(const codegen::GpuTarget &,
                                                     passes::GroupKind kind) {
  return gpuKindLowering(kind);
}
std::string_view targetName(const codegen::CpuTarget &) { return "CPU"; }
std::string_view targetName(const codegen::GpuTarget &) { return "GPU"; }

} // namespace

Error noKernelTemplate(const passes::FusionGroup &group, std::string_view targetName) {
  return unsupportedNode(group.anchor ? *group.anchor : *group.root,
                         fmt::format("no {} kernel template covers {} groups (group {})", targetName,
                                     passes::groupKindName(group.kind), group.id));
}

Schedule defaultSchedule(const ir::Graph &graph, const passes::FusionGroup &group,
                         const LoweringTarget &target) {
  return std::visit(
      [&](const auto &t) -> Schedule {
        const auto *entry = kindLowering(t, group.kind);
        return entry ? entry->defaultSchedule(graph, group, t) : NoSchedule{};
      },
      target);
}

std::vector<Schedule> scheduleSpace(const ir::Graph &graph, const passes::FusionGroup &group,
                                    const LoweringTarget &target) {
  return std::visit(
      [&](const auto &t) -> std::vector<Schedule> {
        const auto *entry = kindLowering(t, group.kind);
        return entry ? entry->scheduleSpace(graph, group, t) : std::vector<Schedule>{NoSchedule{}};
      },
      target);
}

Expected<LoweredKernel> lowerGroup(const ir::Graph &graph, const passes::FusionGroup &group,
                                   const Schedule &schedule, const LoweringTarget &target) {
  KILN_CHECK(group.kind != passes::GroupKind::Constant && group.kind != passes::GroupKind::Alias,
             fmt::format("lowering: group {} is a {} group, which has no kernel", group.id,
                         passes::groupKindName(group.kind)));
  return std::visit(
      [&](const auto &t) -> Expected<LoweredKernel> {
        const auto *entry = kindLowering(t, group.kind);
        if (entry == nullptr)
          return std::unexpected(noKernelTemplate(group, targetName(t)));
        if (hasSymbolicSizes(group)) {
          KILN_TRY_VOID(requireLeadingSymbols(group));
        }
        return entry->lower(graph, group, schedule, t);
      },
      target);
}

Expected<LoweredKernel> lowerGroupAndRunKernelPasses(const ir::Graph &graph,
                                                     const passes::FusionGroup &group,
                                                     const Schedule &schedule,
                                                     const LoweringTarget &target,
                                                     bool verifyKernels) {
  KILN_TRY(LoweredKernel lowered, lowerGroup(graph, group, schedule, target));
  lowered.kernel = kir::runKernelPasses(std::move(lowered.kernel), verifyKernels);
  for (kir::Kernel &followUp : lowered.followUps)
    followUp = kir::runKernelPasses(std::move(followUp), verifyKernels);
  if (lowered.prelude)
    lowered.prelude = kir::runKernelPasses(std::move(*lowered.prelude), verifyKernels);
  return lowered;
}

int gpuComputeCapability(const LoweringTarget &target) {
  const auto *gpu = std::get_if<codegen::GpuTarget>(&target);
  return gpu ? gpu->sm : 0;
}

} // namespace kiln::lower
