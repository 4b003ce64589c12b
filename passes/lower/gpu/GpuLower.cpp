// lowerGroupForGpu: checks that the schedule fits the group, dispatches to the
// GPU lowering of the group's kind and checks the kernel's launch structure.
#include "passes/lower/gpu/GpuLower.h"

#include "ir/kernel/GpuLaunch.h"
#include "passes/lower/LowerUtil.h"
#include "passes/lower/gpu/GpuContraction.h"
#include "passes/lower/gpu/GpuKinds.h"
#include "passes/lower/gpu/GpuLowerContext.h"

#include <fmt/format.h>

namespace kiln::lower {

namespace {

Error noGpuTemplate(const passes::FusionGroup &group) {
  return unsupportedNode(group.anchor ? *group.anchor : *group.root,
                         fmt::format("no GPU kernel template covers {} groups yet (group {})",
                                     passes::groupKindName(group.kind), group.id));
}

Error scheduleMismatch(const passes::FusionGroup &group, const Schedule &schedule) {
  return Error(ErrorCode::InvalidArgument,
               fmt::format("lowering: GPU schedule '{}' does not apply to group {} ({} {})",
                           scheduleStr(schedule), group.id, passes::groupKindName(group.kind),
                           group.root->name()));
}

/// Lowers with the lowering of schedule type S, then checks the launch
/// structure and the static shared memory against the target.
template <typename S, typename F>
Expected<LoweredKernel> lowerWith(const ir::Graph &graph, const passes::FusionGroup &group,
                                  const Schedule &schedule, const codegen::GpuTarget &target,
                                  F lowerBody) {
  const S *chosen = std::get_if<S>(&schedule);
  if (chosen == nullptr)
    return std::unexpected(scheduleMismatch(group, schedule));
  KILN_TRY_VOID(checkGpuSchedule(group, schedule, target));
  GpuLowerContext cx(graph, group, target);
  KILN_TRY(kir::StmtPtr body, lowerBody(cx, *chosen));
  LoweredKernel lowered = finishKernel(group, cx.signature, std::move(body));
  auto launch = kir::gpuLaunchOf(lowered.kernel, target.maxThreadsPerBlock);
  KILN_CHECK(launch.has_value(), fmt::format("GPU lowering of group {} broke the launch structure: {}",
                                             group.id, launch ? "" : launch.error().message()));
  KILN_CHECK(launch->reservedSharedBytes() <= target.maxSharedBytesPerBlock(),
             fmt::format("GPU lowering of group {} uses {} bytes of shared memory", group.id,
                         launch->sharedBytes));
  return lowered;
}

} // namespace

Expected<LoweredKernel> lowerGroupForGpu(const ir::Graph &graph, const passes::FusionGroup &group,
                                         const Schedule &schedule,
                                         const codegen::GpuTarget &target) {
  switch (group.kind) {
  case passes::GroupKind::Pointwise:
    if (std::holds_alternative<GpuTransposeSchedule>(schedule))
      return lowerWith<GpuTransposeSchedule>(graph, group, schedule, target, lowerGpuTranspose);
    return lowerWith<GpuPointwiseSchedule>(graph, group, schedule, target, lowerGpuPointwise);
  case passes::GroupKind::Reduction:
    return lowerWith<GpuReductionSchedule>(graph, group, schedule, target, lowerGpuReduction);
  case passes::GroupKind::RowNorm:
    return lowerWith<GpuRowNormSchedule>(graph, group, schedule, target, lowerGpuRowNorm);
  case passes::GroupKind::Pooling:
    return lowerWith<GpuPoolingSchedule>(graph, group, schedule, target, lowerGpuPooling);
  case passes::GroupKind::Contraction:
    return lowerContractionForGpu(graph, group, schedule, target);
  case passes::GroupKind::Constant:
  case passes::GroupKind::Alias:
    KILN_UNREACHABLE(fmt::format("lowering: group {} is a {} group, which has no kernel", group.id,
                                 passes::groupKindName(group.kind)));
  default: break;
  }
  return std::unexpected(noGpuTemplate(group));
}

} // namespace kiln::lower
