// Contraction groups: dispatch on the anchor (matmul or conv2d) to its lowering and schedules.
#include "passes/lower/LowerContraction.h"

#include "passes/lower/LowerConv2D.h"
#include "passes/lower/LowerMatMul.h"
#include "passes/lower/LowerUtil.h"

namespace kiln::lower {

namespace {

bool isConv(const passes::FusionGroup &group) { return group.anchor->kind() == ir::OpKind::Conv2D; }

} // namespace

Expected<LoweredKernel> lowerContractionForCpu(const ir::Graph &graph,
                                               const passes::FusionGroup &group,
                                               const Schedule &schedule,
                                               const codegen::CpuTarget &target) {
  KILN_CHECK(group.kind == passes::GroupKind::Contraction && group.anchor,
             "lowerContractionForCpu takes a Contraction group");
  const ir::Node &anchor = *group.anchor;
  if (anchor.kind() != ir::OpKind::MatMul && anchor.kind() != ir::OpKind::Conv2D)
    return std::unexpected(unsupportedNode(anchor, "no contraction kernel template"));
  if (isConv(group)) {
    if (const auto *conv = std::get_if<Conv2DSchedule>(&schedule))
      return lowerConv2D(graph, group, *conv, target);
    // A plain GEMM schedule applies to the im2col algorithm.
    if (const auto *gemm = std::get_if<MatMulSchedule>(&schedule)) {
      Conv2DSchedule conv;
      conv.gemm = *gemm;
      conv.ocBlock = gemm->nr;
      return lowerConv2D(graph, group, conv, target);
    }
    return makeError(ErrorCode::InvalidArgument,
                     "conv2d needs a Conv2DSchedule or MatMulSchedule, got " +
                         scheduleStr(schedule));
  }
  if (const auto *gemm = std::get_if<MatMulSchedule>(&schedule))
    return lowerMatMul(graph, group, *gemm, target);
  return makeError(ErrorCode::InvalidArgument,
                   "matmul needs a MatMulSchedule, got " + scheduleStr(schedule));
}

Schedule defaultContractionSchedule(const ir::Graph &graph, const passes::FusionGroup &group,
                                    const codegen::CpuTarget &target) {
  (void)graph;
  if (isConv(group))
    return defaultConv2DSchedule(*group.anchor, target);
  return defaultGemmSchedule(matMulGemmShape(*group.anchor), target);
}

std::vector<Schedule> contractionScheduleSpace(const ir::Graph &graph,
                                               const passes::FusionGroup &group,
                                               const codegen::CpuTarget &target) {
  (void)graph;
  std::vector<Schedule> space;
  if (isConv(group)) {
    for (const Conv2DSchedule &s : conv2DScheduleSpace(*group.anchor, target))
      space.push_back(s);
  } else {
    for (const MatMulSchedule &s :
         gemmScheduleSpace(matMulGemmShape(*group.anchor), target, /*allowUnpackedA=*/true))
      space.push_back(s);
  }
  return space;
}

} // namespace kiln::lower
