// Contraction groups (matmul, batched matmul, conv2d as an implicit GEMM, with their fused
// epilogues) on every target: the anchor's GEMM problem (matMulGemmProblem, conv2DGemmProblem),
// its epilogue and kernel (ContractionKernel) and the checks are shared; the CPU binds them to
// the BLIS nest (GemmTemplate.h; either conv2d algorithm), the GPU to its CUDA-core or
// tensor-core template (GpuGemmTemplate.h; conv2d as Im2col), each with its own schedules.
#include "passes/lower/LowerContraction.h"

#include "passes/lower/ContractionKernel.h"
#include "passes/lower/LowerConv2D.h"
#include "passes/lower/LowerMatMul.h"
#include "passes/lower/LowerUtil.h"
#include "passes/lower/RuntimeSizes.h"
#include "passes/lower/gpu/GpuContraction.h"
#include "passes/lower/gpu/GpuGemmSchedule.h"
#include "passes/lower/gpu/GpuGemmTemplate.h"
#include "passes/lower/gpu/GpuMmaSchedule.h"
#include "passes/lower/gpu/GpuWgmmaSchedule.h"

#include <fmt/format.h>

namespace kiln::lower {

namespace {

using Algorithm = Conv2DSchedule::Algorithm;

bool isConv(const passes::FusionGroup &group) { return group.anchor->kind() == ir::OpKind::Conv2D; }

/// The anchor must be an op some GEMM template covers; `targetName`: "CPU", "GPU".
Expected<void> checkAnchor(const passes::FusionGroup &group, std::string_view targetName) {
  KILN_CHECK(group.kind == passes::GroupKind::Contraction && group.anchor,
             "the contraction lowering takes a Contraction group");
  const ir::Node &anchor = *group.anchor;
  if (anchor.kind() != ir::OpKind::MatMul && anchor.kind() != ir::OpKind::Conv2D)
    return std::unexpected(unsupportedNode(
        anchor, fmt::format("no {} contraction kernel template", targetName)));
  return {};
}

/// The error for a schedule the target does not take for this anchor (`accepted`: the
/// schedule types it takes).
Error scheduleMismatch(const passes::FusionGroup &group, std::string_view targetName,
                       std::string_view accepted, const Schedule &schedule) {
  return Error(ErrorCode::InvalidArgument,
               fmt::format("group {} ({}): a {} {} needs a {}, got {}", group.id,
                           group.anchor->name(), targetName, isConv(group) ? "conv2d" : "matmul",
                           accepted, scheduleStr(schedule)));
}

/// The group's GEMM (conv2d's with `algorithm`), its epilogue and kernel around the body that
/// a target's template (`lowerGemm`) makes of it.
template <typename LowerGemm>
Expected<LoweredKernel> lowerThroughTemplate(const passes::FusionGroup &group, Algorithm algorithm,
                                             LowerGemm &&lowerGemm, RuntimeSizes *sizes = nullptr) {
  ContractionKernel kernel(group, sizes);
  GemmProblem problem = isConv(group) ? conv2DGemmProblem(*group.anchor, algorithm, kernel)
                                      : matMulGemmProblem(*group.anchor, kernel);
  if (sizes && hasSymbolicSizes(group)) {
    if (isConv(group)) {
      setConv2DRuntimeImages(*group.anchor, algorithm, *sizes, problem);
    } else {
      KILN_TRY_VOID(setMatMulRuntimeSizes(*group.anchor, *sizes, problem));
    }
  }
  KILN_TRY(GemmLowering lowered, lowerGemm(problem));
  LoweredKernel result = kernel.finish(lowered);
  if (sizes)
    sizes->bind(result);
  return result;
}

/// Im2col keeps the output's contiguous axis on N (pixels for nchw, channels for nhwc), so
/// each thread row of the GPU epilogue writes consecutive addresses.
constexpr Algorithm kGpuConvAlgorithm = Algorithm::Im2col;

/// A GPU GEMM schedule as the schedule of the group's kind.
Schedule gpuScheduleOf(const passes::FusionGroup &group, const GpuMatMulSchedule &gemm) {
  if (isConv(group))
    return GpuConv2DSchedule{gemm};
  return gemm;
}

} // namespace

// ---- the CPU binding

Expected<LoweredKernel> lowerContractionForCpu(const ir::Graph &graph,
                                               const passes::FusionGroup &group,
                                               const Schedule &schedule,
                                               const codegen::CpuTarget &target) {
  KILN_TRY_VOID(checkAnchor(group, "CPU"));
  Conv2DSchedule conv; // a plain GEMM schedule is conv2d's with the im2col algorithm
  if (const auto *given = std::get_if<Conv2DSchedule>(&schedule); given && isConv(group)) {
    conv = *given;
  } else if (const auto *gemm = std::get_if<MatMulSchedule>(&schedule)) {
    conv.gemm = *gemm;
    conv.ocBlock = gemm->nr;
  } else {
    return std::unexpected(scheduleMismatch(
        group, "CPU", isConv(group) ? "Conv2DSchedule or MatMulSchedule" : "MatMulSchedule",
        schedule));
  }
  MatMulSchedule gemm = conv.gemm;
  if (conv.algorithm == Algorithm::Direct) {
    gemm.nr = conv.ocBlock;
    gemm.packA = false;
  }
  // A weight that depends on parameters alone is packed once, in a prelude kernel whose
  // result the host plan keeps between runs (LoweredKernel::prelude).
  bool parameterWeight = dependsOnParametersOnly(group.anchor->operand(1));
  RuntimeSizes sizes(graph);
  return lowerThroughTemplate(
      group, conv.algorithm,
      [&](const GemmProblem &problem) {
        GemmProblem withWeight = problem;
        withWeight.prepackB = problem.bWeight.has_value() && parameterWeight;
        return lowerGemm(withWeight, gemm, target);
      },
      &sizes);
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

// ---- the GPU binding

GemmShape gpuContractionGemmShape(const passes::FusionGroup &group) {
  if (isConv(group))
    return conv2DGemmShape(*group.anchor, kGpuConvAlgorithm);
  return matMulGemmShape(*group.anchor);
}

Expected<LoweredKernel> lowerContractionForGpu(const ir::Graph &graph,
                                               const passes::FusionGroup &group,
                                               const Schedule &schedule,
                                               const codegen::GpuTarget &target) {
  KILN_TRY_VOID(checkAnchor(group, "GPU"));
  GpuMatMulSchedule gemm;
  if (const auto *conv = std::get_if<GpuConv2DSchedule>(&schedule); conv && isConv(group))
    gemm = conv->gemm;
  else if (const auto *mm = std::get_if<GpuMatMulSchedule>(&schedule))
    gemm = *mm;
  else
    return std::unexpected(
        scheduleMismatch(group, "GPU",
                         isConv(group) ? "GpuConv2DSchedule or GpuMatMulSchedule"
                                       : "GpuMatMulSchedule",
                         schedule));
  // A symbolic batch: the GEMM computes at its largest extents (rows and matrices past the
  // run's are the buffers' spare bytes, computed and never read); the SIMT template stores the
  // run's rows only. A sum over the run's rows (K) is refused: its extent changes the result.
  RuntimeSizes sizes(graph);
  KILN_TRY(LoweredKernel result,
           lowerThroughTemplate(
               group, kGpuConvAlgorithm,
               [&](const GemmProblem &problem) -> Expected<GemmLowering> {
                 if (problem.runtimeK)
                   return std::unexpected(unsupportedNode(
                       *group.anchor, "a GPU GEMM summing over a size known at run time (K, "
                                      "the batch of a weight's gradient) takes static sizes "
                                      "only so far (docs/dynamic-shapes.md)"));
                 return lowerGpuGemm(problem, gpuContractionGemmShape(group), gemm, target);
               },
               &sizes));
  // The register tile must stay in registers: the schedule's register rule sizes it for one
  // block per SM, and ptxas left to itself caps registers for occupancy and spills a few.
  result.kernel.minBlocksPerSm = 1;
  return result;
}

Schedule defaultGpuContractionSchedule(const ir::Graph &graph, const passes::FusionGroup &group,
                                       const codegen::GpuTarget &target) {
  (void)graph;
  GemmShape shape = gpuContractionGemmShape(group);
  return gpuScheduleOf(group, gpuMmaKindFor(shape, target) ? defaultGpuMmaSchedule(shape, target)
                                                           : defaultGpuGemmSchedule(shape, target));
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
  return gpuScheduleOf(group, gemm);
}

std::vector<Schedule> gpuContractionScheduleSpace(const ir::Graph &graph,
                                                  const passes::FusionGroup &group,
                                                  const codegen::GpuTarget &target) {
  (void)graph;
  GemmShape shape = gpuContractionGemmShape(group);
  // Tensor-core schedules first (the default among them) where the GEMM can use them.
  std::vector<GpuMatMulSchedule> gemms = gpuMmaScheduleSpace(shape, target);
  for (const GpuMatMulSchedule &gemm : gpuGemmScheduleSpace(shape, target))
    gemms.push_back(gemm);
  std::vector<Schedule> space;
  for (const GpuMatMulSchedule &gemm : gemms)
    space.push_back(gpuScheduleOf(group, gemm));
  return space;
}

} // namespace kiln::lower
