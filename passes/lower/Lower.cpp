// lowerGroupForCpu: checks that the schedule fits the group and dispatches to
// the lowering of the group's kind.
#include "passes/lower/Lower.h"

#include "passes/lower/LowerContraction.h"
#include "passes/lower/LowerKinds.h"

#include <fmt/format.h>

namespace kiln::lower {

Expected<kir::StmtPtr> LowerContext::storeRoot(std::span<const kir::ExprPtr> index) {
  KILN_TRY(kir::ExprPtr value, emitter.at(root(), index));
  return storeBound(signature.out, linearIndex(index, root()->type().shape), value, names);
}

namespace {

Error scheduleMismatch(const passes::FusionGroup &group, const Schedule &schedule) {
  return Error(ErrorCode::InvalidArgument,
               fmt::format("lowering: schedule '{}' does not apply to group {} ({} {})",
                           scheduleStr(schedule), group.id, passes::groupKindName(group.kind),
                           group.root->name()));
}

template <typename S, typename F>
Expected<LoweredKernel> lowerWith(const ir::Graph &graph, const passes::FusionGroup &group,
                                  const Schedule &schedule, const codegen::CpuTarget &target,
                                  F lowerBody) {
  const S *chosen = std::get_if<S>(&schedule);
  if (chosen == nullptr)
    return std::unexpected(scheduleMismatch(group, schedule));
  LowerContext cx(graph, group, target);
  KILN_TRY(kir::StmtPtr body, lowerBody(cx, *chosen));
  return finishKernel(group, cx.signature, std::move(body));
}

} // namespace

Expected<LoweredKernel> lowerGroupForCpu(const ir::Graph &graph, const passes::FusionGroup &group,
                                         const Schedule &schedule,
                                         const codegen::CpuTarget &target) {
  switch (group.kind) {
  case passes::GroupKind::Pointwise:
    if (std::holds_alternative<TransposeSchedule>(schedule))
      return lowerWith<TransposeSchedule>(graph, group, schedule, target, lowerTranspose);
    return lowerWith<PointwiseSchedule>(graph, group, schedule, target, lowerPointwise);
  case passes::GroupKind::Reduction:
    return lowerWith<ReductionSchedule>(graph, group, schedule, target, lowerReduction);
  case passes::GroupKind::RowNorm:
    return lowerWith<RowNormSchedule>(graph, group, schedule, target, lowerRowNorm);
  case passes::GroupKind::Pooling:
    return lowerWith<PoolingSchedule>(graph, group, schedule, target, lowerPooling);
  case passes::GroupKind::Contraction:
    return lowerContractionForCpu(graph, group, schedule, target);
  case passes::GroupKind::Constant:
  case passes::GroupKind::Alias:
    KILN_UNREACHABLE(fmt::format("lowering: group {} is a {} group, which has no kernel", group.id,
                                 passes::groupKindName(group.kind)));
  case passes::GroupKind::Opaque: break;
  }
  return std::unexpected(
      unsupportedNode(group.anchor ? *group.anchor : *group.root, fmt::format("no CPU kernel template covers this op (group {})",
                                               group.id)));
}

} // namespace kiln::lower
