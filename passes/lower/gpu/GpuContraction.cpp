// Contraction groups on the GPU: the problem descriptions of the CPU lowering (matmul and
// implicit-im2col conv2d element functions, the fused epilogue of ContractionKernel) lowered
// through the GPU GEMM template.
#include "passes/lower/gpu/GpuContraction.h"

#include "passes/lower/ContractionKernel.h"
#include "passes/lower/LowerConv2D.h"
#include "passes/lower/LowerMatMul.h"
#include "passes/lower/LowerUtil.h"
#include "passes/lower/gpu/GpuGemmSchedule.h"
#include "passes/lower/gpu/GpuGemmTemplate.h"
#include "passes/lower/gpu/GpuMmaSchedule.h"
#include "passes/lower/gpu/GpuWgmmaSchedule.h"

#include <fmt/format.h>

namespace kiln::lower {

namespace {

using Algorithm = Conv2DSchedule::Algorithm;

bool isConv(const passes::FusionGroup &group) { return group.anchor->kind() == ir::OpKind::Conv2D; }

/// Im2col keeps the output's contiguous axis on N (pixels for nchw, channels for nhwc), so
/// each thread row of the epilogue writes consecutive addresses.
constexpr Algorithm kGpuConvAlgorithm = Algorithm::Im2col;

} // namespace

GemmShape gpuContractionGemmShape(const passes::FusionGroup &group) {
  if (isConv(group))
    return conv2DGemmShape(*group.anchor, kGpuConvAlgorithm);
  return matMulGemmShape(*group.anchor);
}

Expected<LoweredKernel> lowerContractionForGpu(const ir::Graph &graph,
                                               const passes::FusionGroup &group,
                                               const Schedule &schedule,
                                               const codegen::GpuTarget &target) {
  (void)graph;
  KILN_CHECK(group.kind == passes::GroupKind::Contraction && group.anchor,
             "lowerContractionForGpu takes a Contraction group");
  const ir::Node &anchor = *group.anchor;
  if (anchor.kind() != ir::OpKind::MatMul && anchor.kind() != ir::OpKind::Conv2D)
    return std::unexpected(unsupportedNode(anchor, "no GPU contraction kernel template"));
  GpuMatMulSchedule gemm;
  if (const auto *conv = std::get_if<GpuConv2DSchedule>(&schedule); conv && isConv(group))
    gemm = conv->gemm;
  else if (const auto *mm = std::get_if<GpuMatMulSchedule>(&schedule))
    gemm = *mm;
  else
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("group {} ({}): a GPU {} needs a {}, got {}", group.id,
                                 anchor.name(), isConv(group) ? "conv2d" : "matmul",
                                 isConv(group) ? "GpuConv2DSchedule or GpuMatMulSchedule"
                                               : "GpuMatMulSchedule",
                                 scheduleStr(schedule)));
  ContractionKernel kernel(group);
  GemmProblem problem = isConv(group)
                            ? conv2DGemmProblem(anchor, kGpuConvAlgorithm, kernel)
                            : matMulGemmProblem(anchor, kernel);
  KILN_TRY(GemmLowering lowered, lowerGpuGemm(problem, gemm, target));
  LoweredKernel result = kernel.finish(lowered);
  // The register tile must stay in registers: the schedule's register rule
  // sizes it for one block per SM, and ptxas left to itself caps registers
  // for occupancy and spills a few of them.
  result.kernel.minBlocksPerSm = 1;
  return result;
}

Schedule defaultGpuContractionSchedule(const ir::Graph &graph, const passes::FusionGroup &group,
                                       const codegen::GpuTarget &target) {
  (void)graph;
  GemmShape shape = gpuContractionGemmShape(group);
  GpuMatMulSchedule gemm = gpuMmaKindFor(shape, target) ? defaultGpuMmaSchedule(shape, target)
                                                        : defaultGpuGemmSchedule(shape, target);
  if (isConv(group))
    return GpuConv2DSchedule{gemm};
  return gemm;
}

std::optional<Schedule> wgmmaContractionSchedule(const passes::FusionGroup &group,
                                                 const codegen::GpuTarget &target, bool tma) {
  if (group.kind != passes::GroupKind::Contraction)
    return std::nullopt;
  GemmShape shape = gpuContractionGemmShape(group);
  if (!gpuWgmmaKindFor(shape, target))
    return std::nullopt;
  GpuMatMulSchedule gemm = defaultGpuWgmmaSchedule(shape, target);
  if (tma && shape.tmaOperands)
    gemm = defaultGpuTmaSchedule(shape, target);
  if (isConv(group))
    return GpuConv2DSchedule{gemm};
  return gemm;
}

std::vector<Schedule> gpuContractionScheduleSpace(const ir::Graph &graph,
                                                  const passes::FusionGroup &group,
                                                  const codegen::GpuTarget &target) {
  (void)graph;
  std::vector<Schedule> space;
  GemmShape shape = gpuContractionGemmShape(group);
  // Tensor-core schedules first (the default among them) where the GEMM can use them.
  std::vector<GpuMatMulSchedule> gemms = gpuMmaScheduleSpace(shape, target);
  for (const GpuMatMulSchedule &gemm : gpuGemmScheduleSpace(shape, target))
    gemms.push_back(gemm);
  for (const GpuMatMulSchedule &gemm : gemms) {
    if (isConv(group))
      space.push_back(GpuConv2DSchedule{gemm});
    else
      space.push_back(gemm);
  }
  return space;
}

} // namespace kiln::lower
