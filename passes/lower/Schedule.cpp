// Schedules as text, and the default and the search space of every group kind
// (contractions delegate to their own heuristics in LowerContraction.h).
#include "passes/lower/Schedule.h"

#include "passes/lower/LowerContraction.h"
#include "passes/lower/LowerKinds.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::lower {

namespace {

std::string matMulStr(const MatMulSchedule &s) {
  std::string pack = s.packA && s.packB ? "ab" : s.packA ? "a" : s.packB ? "b" : "none";
  return fmt::format("mc={} nc={} kc={} mr={} nr={} vw={} pack={} par={}", s.mc, s.nc, s.kc, s.mr,
                     s.nr, s.vectorWidth, pack, gemmParallelName(s.parallel));
}

/// The tensor-core form leaves out the CUDA-core register tile, which it does
/// not use, when it is zero (and the CUDA-core form the warp tile), so the
/// usual text stays short while every field still prints when set.
std::string gpuGemmStr(const GpuMatMulSchedule &s) {
  if (s.tensorCores()) {
    std::string text =
        fmt::format("{} bm={} bn={} bk={} wm={} wn={} stages={} vw={} splitk={}",
                    s.wgmma ? "wgmma" : "mma", s.blockM, s.blockN, s.blockK, s.warpM, s.warpN,
                    s.stages, s.vectorWidth, s.splitK);
    if (s.threadM != 0 || s.threadN != 0)
      text += fmt::format(" tm={} tn={}", s.threadM, s.threadN);
    if (s.groupM != 1)
      text += fmt::format(" group={}", s.groupM);
    if (s.tma)
      text += " tma";
    if (s.persistent)
      text += " persistent";
    return text;
  }
  std::string text = fmt::format("bm={} bn={} bk={} tm={} tn={} stages={} vw={} splitk={}",
                                 s.blockM, s.blockN, s.blockK, s.threadM, s.threadN, s.stages,
                                 s.vectorWidth, s.splitK);
  if (s.warpM != 0 || s.warpN != 0)
    text += fmt::format(" wm={} wn={}", s.warpM, s.warpN);
  return text;
}

struct ScheduleStr {
  std::string operator()(const NoSchedule &) const { return "none"; }
  std::string operator()(const PointwiseSchedule &s) const {
    return fmt::format("pointwise vw={} par={}", s.vectorWidth, s.minParallelWork);
  }
  std::string operator()(const TransposeSchedule &s) const {
    return fmt::format("transpose tile={} par={}", s.tile, s.minParallelWork);
  }
  std::string operator()(const ReductionSchedule &s) const {
    return fmt::format("reduction vw={} par={}", s.vectorWidth, s.minParallelWork);
  }
  std::string operator()(const RowNormSchedule &s) const {
    return fmt::format("rownorm vw={} par={}", s.vectorWidth, s.minParallelWork);
  }
  std::string operator()(const PoolingSchedule &s) const {
    return fmt::format("pooling vw={} par={}", s.vectorWidth, s.minParallelWork);
  }
  std::string operator()(const MatMulSchedule &s) const { return "matmul " + matMulStr(s); }
  std::string operator()(const Conv2DSchedule &s) const {
    if (s.algorithm == Conv2DSchedule::Algorithm::Direct)
      return fmt::format("conv2d direct ocb={} {}", s.ocBlock, matMulStr(s.gemm));
    // Im2col does not use ocBlock: it prints only when it is not the GEMM's nr (its usual value).
    std::string text = "conv2d im2col " + matMulStr(s.gemm);
    if (s.ocBlock != s.gemm.nr)
      text += fmt::format(" ocb={}", s.ocBlock);
    return text;
  }
  std::string operator()(const GpuPointwiseSchedule &s) const {
    return fmt::format("gpu.pointwise threads={} vw={} ept={} bpsm={}", s.threadsPerBlock,
                       s.vectorWidth, s.elementsPerThread, s.maxBlocksPerSm);
  }
  std::string operator()(const GpuTransposeSchedule &s) const {
    return fmt::format("gpu.transpose tile={} rows={}", s.tile, s.rowsPerPass);
  }
  std::string operator()(const GpuReductionSchedule &s) const {
    return fmt::format("gpu.reduction threads={} rows={} vw={}", s.threadsPerBlock, s.rowsPerBlock,
                       s.vectorWidth);
  }
  std::string operator()(const GpuRowNormSchedule &s) const {
    return fmt::format("gpu.rownorm threads={} rows={} vw={}", s.threadsPerBlock, s.rowsPerBlock,
                       s.vectorWidth);
  }
  std::string operator()(const GpuPoolingSchedule &s) const {
    return fmt::format("gpu.pooling threads={}", s.threadsPerBlock);
  }
  std::string operator()(const GpuMatMulSchedule &s) const { return "gpu.matmul " + gpuGemmStr(s); }
  std::string operator()(const GpuConv2DSchedule &s) const {
    return "gpu.conv2d " + gpuGemmStr(s.gemm);
  }
};

/// The widest element the group computes with, in bytes (narrow floats
/// compute in f32; float sums accumulate in f64).
int widestComputeBytes(const passes::FusionGroup &group) {
  int bytes = 4;
  auto consider = [&](DType dtype) {
    bytes = std::max(bytes, isNarrowFloat(dtype) ? 4 : dtypeByteSize(dtype));
  };
  for (const ir::Node *node : group.nodes) {
    consider(node->type().dtype);
    for (const ir::Value *operand : node->operands())
      consider(operand->type().dtype);
  }
  if (group.anchor != nullptr) {
    switch (group.anchor->kind()) {
    case ir::OpKind::ReduceSum:
    case ir::OpKind::ReduceMean:
    case ir::OpKind::ReduceProd:
    case ir::OpKind::AvgPool2D:
    case ir::OpKind::GlobalAvgPool:
    case ir::OpKind::LayerNorm:
      if (isFloatingPoint(group.anchor->operand(0)->type().dtype))
        bytes = 8;
      break;
    default: break;
    }
  }
  return bytes;
}

/// Elements of the group's widest type in one vector register.
int registerLanes(const passes::FusionGroup &group, const codegen::CpuTarget &target) {
  return std::max(1, target.vectorBits / (8 * widestComputeBytes(group)));
}

/// Below this many elements, handing work to the thread pool costs more than
/// it saves; element-heavy kernels (transcendentals, windows) break even earlier.
int64_t parallelThreshold(const passes::FusionGroup &group) {
  if (group.kind == passes::GroupKind::RowNorm || group.kind == passes::GroupKind::Pooling)
    return int64_t{1} << 14;
  return int64_t{1} << 15;
}

} // namespace

std::string scheduleStr(const Schedule &schedule) { return std::visit(ScheduleStr{}, schedule); }

std::string_view gemmParallelName(MatMulSchedule::Parallel parallel) {
  switch (parallel) {
  case MatMulSchedule::Parallel::Serial: return "serial";
  case MatMulSchedule::Parallel::Outer: return "outer";
  case MatMulSchedule::Parallel::Inner: return "inner";
  }
  return "?";
}

Schedule defaultSchedule(const ir::Graph &graph, const passes::FusionGroup &group,
                         const codegen::CpuTarget &target) {
  int lanes = registerLanes(group, target);
  int64_t threshold = parallelThreshold(group);
  switch (group.kind) {
  case passes::GroupKind::Pointwise:
    if (transposedAxis(group))
      return TransposeSchedule{.tile = 32, .minParallelWork = threshold};
    return PointwiseSchedule{.vectorWidth = lanes, .minParallelWork = threshold};
  // Two registers of partial accumulators hide the latency of the adds.
  case passes::GroupKind::Reduction:
    return ReductionSchedule{.vectorWidth = 2 * lanes, .minParallelWork = threshold};
  case passes::GroupKind::RowNorm:
    return RowNormSchedule{.vectorWidth = 2 * lanes, .minParallelWork = threshold};
  case passes::GroupKind::Pooling:
    return PoolingSchedule{.vectorWidth = 2 * lanes, .minParallelWork = threshold};
  case passes::GroupKind::Contraction: return defaultContractionSchedule(graph, group, target);
  case passes::GroupKind::Constant:
  case passes::GroupKind::Alias:
  case passes::GroupKind::Opaque: return NoSchedule{};
  }
  KILN_UNREACHABLE("defaultSchedule: group kind");
}

std::vector<Schedule> scheduleSpace(const ir::Graph &graph, const passes::FusionGroup &group,
                                    const codegen::CpuTarget &target) {
  Schedule chosen = defaultSchedule(graph, group, target);
  if (group.kind == passes::GroupKind::Contraction)
    return contractionScheduleSpace(graph, group, target);
  std::vector<Schedule> space{chosen};
  auto addUnique = [&](Schedule s) {
    std::string text = scheduleStr(s);
    for (const Schedule &have : space)
      if (scheduleStr(have) == text)
        return;
    space.push_back(std::move(s));
  };
  int lanes = registerLanes(group, target);
  int64_t threshold = parallelThreshold(group);
  const int64_t thresholds[] = {threshold / 4, threshold, threshold * 4};
  switch (group.kind) {
  case passes::GroupKind::Pointwise:
    for (int64_t tile : {16, 32, 64})
      if (transposedAxis(group))
        addUnique(TransposeSchedule{.tile = tile, .minParallelWork = threshold});
    for (int vw : {lanes, 2 * lanes})
      for (int64_t t : thresholds)
        addUnique(PointwiseSchedule{.vectorWidth = vw, .minParallelWork = t});
    break;
  case passes::GroupKind::Reduction:
  case passes::GroupKind::RowNorm:
  case passes::GroupKind::Pooling:
    for (int vw : {lanes, 2 * lanes, 4 * lanes})
      for (int64_t t : thresholds) {
        if (group.kind == passes::GroupKind::Reduction)
          addUnique(ReductionSchedule{.vectorWidth = vw, .minParallelWork = t});
        else if (group.kind == passes::GroupKind::RowNorm)
          addUnique(RowNormSchedule{.vectorWidth = vw, .minParallelWork = t});
        else
          addUnique(PoolingSchedule{.vectorWidth = vw, .minParallelWork = t});
      }
    break;
  default: break;
  }
  return space;
}

} // namespace kiln::lower
