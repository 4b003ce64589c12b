// GPU lowering and schedules of contraction groups (matmul, batched matmul, conv2d as an
// implicit GEMM, with their fused epilogues) on CUDA cores or tensor cores: the Contraction
// entry of the GPU lowering table (GpuLoweringTable.cpp). Implemented in
// passes/lower/LowerContraction.cpp, the GPU binding of the one contraction lowering.
#pragma once

#include "codegen/Target.h"
#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/Lower.h"
#include "passes/lower/Schedule.h"
#include "support/Error.h"

#include <optional>
#include <vector>

namespace kiln::lower {

/// The GEMM a Contraction group's anchor becomes on the GPU: matMulGemmShape for matmul; for
/// conv2d the Im2col orientation (nchw: C[o][p] per image and group, nhwc: C[p][o] per group),
/// so the output is written along its contiguous axis.
GemmShape gpuContractionGemmShape(const passes::FusionGroup &group);

/// Lowers a Contraction group with a GpuMatMulSchedule (matmul or conv2d) or a
/// GpuConv2DSchedule (conv2d). Another schedule kind is an InvalidArgument error naming the
/// group; an illegal schedule one naming the field.
Expected<LoweredKernel> lowerContractionForGpu(const ir::Graph &graph,
                                               const passes::FusionGroup &group,
                                               const Schedule &schedule,
                                               const codegen::GpuTarget &target);

/// The heuristic schedule (GpuMatMulSchedule for matmul, GpuConv2DSchedule for conv2d).
Schedule defaultGpuContractionSchedule(const ir::Graph &graph, const passes::FusionGroup &group,
                                       const codegen::GpuTarget &target);

/// The schedule that runs a Contraction group on warpgroup products (wgmma, sm_90a): the
/// default's GEMM replaced by defaultGpuWgmmaSchedule. nullopt for other groups and for
/// contractions that cannot take them (gpuWgmmaKindFor). Until wgmma is measured on a GPU it
/// is not the default; this is how a compile asks for it (`kiln run --wgmma`). With `tma`, the
/// operands arrive by bulk tensor copies from a producer warpgroup wherever they are plain
/// strided tensors (GemmShape::tmaOperands; `kiln run --tma`).
std::optional<Schedule> wgmmaContractionSchedule(const passes::FusionGroup &group,
                                                 const codegen::GpuTarget &target,
                                                 bool tma = false);

/// Every legal schedule, the default first.
std::vector<Schedule> gpuContractionScheduleSpace(const ir::Graph &graph,
                                                  const passes::FusionGroup &group,
                                                  const codegen::GpuTarget &target);

} // namespace kiln::lower
