// Schedules as text (the defaults and spaces of each kind are in the targets'
// lowering tables, LoweringTable.h).
#include "passes/lower/Schedule.h"

#include <fmt/format.h>

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

} // namespace kiln::lower
