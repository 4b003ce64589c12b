// lowerGroupForGpu: checks that the schedule fits the group, dispatches to the
// GPU lowering of the group's kind and checks the kernel's launch structure.
#include "passes/lower/gpu/GpuLower.h"

#include "ir/kernel/GpuLaunch.h"
#include "passes/lower/LowerUtil.h"
#include "passes/lower/gpu/GpuContraction.h"
#include "passes/lower/gpu/GpuLowerContext.h"

#include <fmt/format.h>

namespace kiln::lower {

namespace {

Error noGpuTemplate(const passes::FusionGroup &group) {
  return unsupportedNode(group.anchor ? *group.anchor : *group.root,
                         fmt::format("no GPU kernel template covers {} groups yet (group {})",
                                     passes::groupKindName(group.kind), group.id));
}

} // namespace

Expected<LoweredKernel> lowerGroupForGpu(const ir::Graph &graph, const passes::FusionGroup &group,
                                         const Schedule &schedule,
                                         const codegen::GpuTarget &target) {
  (void)graph;
  (void)schedule;
  (void)target;
  switch (group.kind) {
  case passes::GroupKind::Constant:
  case passes::GroupKind::Alias:
    KILN_UNREACHABLE(fmt::format("lowering: group {} is a {} group, which has no kernel", group.id,
                                 passes::groupKindName(group.kind)));
  case passes::GroupKind::Contraction:
    return lowerContractionForGpu(graph, group, schedule, target);
  default: break;
  }
  return std::unexpected(noGpuTemplate(group));
}

Schedule defaultGpuSchedule(const ir::Graph &graph, const passes::FusionGroup &group,
                            const codegen::GpuTarget &target) {
  if (group.kind == passes::GroupKind::Contraction)
    return defaultGpuContractionSchedule(graph, group, target);
  return NoSchedule{};
}

std::vector<Schedule> gpuScheduleSpace(const ir::Graph &graph, const passes::FusionGroup &group,
                                       const codegen::GpuTarget &target) {
  if (group.kind == passes::GroupKind::Contraction)
    return gpuContractionScheduleSpace(graph, group, target);
  return {defaultGpuSchedule(graph, group, target)};
}

} // namespace kiln::lower
