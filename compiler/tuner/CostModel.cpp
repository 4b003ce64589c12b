// The analytical cost model: a roofline per candidate, refined by what the
// schedule heuristics already know (register tiles, cache blocks, waves).
#include "compiler/tuner/CostModel.h"

#include "compiler/KernelCost.h"
#include "passes/lower/GpuSchedule.h"
#include "passes/lower/LowerConv2D.h"
#include "passes/lower/LowerMatMul.h"
#include "passes/lower/gpu/GpuContraction.h"
#include "passes/lower/gpu/GpuGemmSchedule.h"
#include "passes/lower/gpu/GpuMmaSchedule.h"
#include "passes/lower/gpu/TileScore.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kiln::tuning {

namespace {

using lower::MatMulSchedule;
using Parallel = MatMulSchedule::Parallel;
using lower::ceilDiv;

// Nominal machine figures. The model ranks candidates on one target, so only
// ratios matter; fixed figures keep the ranking deterministic across runs.
constexpr double kCpuClockHz = 3.0e9;
constexpr double kCpuFmaPipes = 2;
constexpr double kCpuBytesPerSecondPerCore = 10e9;
constexpr double kCpuMemoryBytesPerSecond = 40e9;
/// Waking the pool's sleeping workers through a condition variable and
/// joining them: tens of microseconds.
constexpr double kForkJoinSeconds = 15e-6;
constexpr double kGpuClockHz = 1.6e9;
constexpr double kGpuLanesPerSm = 128;
constexpr double kGpuTensorCoreSpeedup = 8;
constexpr double kGpuMemoryBytesPerSecond = 2.0e12;
constexpr double kGpuLaunchSeconds = 3e-6;

int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/// How far `bytes` overflows `capacity`, on a log scale: 0 when it fits, 1
/// at twice the capacity, at most 2.
double overflow(double bytes, double capacity) {
  if (capacity <= 0 || bytes <= capacity)
    return 0;
  return std::min(2.0, std::log2(bytes / capacity));
}

double cpuMemorySeconds(double bytes, int threads) {
  return bytes / std::min(kCpuMemoryBytesPerSecond, kCpuBytesPerSecondPerCore * threads);
}

const ir::Node *convAnchor(const passes::FusionGroup &group) {
  return group.anchor != nullptr && group.anchor->kind() == ir::OpKind::Conv2D ? group.anchor
                                                                               : nullptr;
}

/// Bytes of every group input and the output: what a memory-bound kernel moves.
double groupBytes(const passes::FusionGroup &group) {
  double bytes = 0;
  for (const ir::Value *input : group.inputs)
    bytes += double(input->type().numElements()) * dtypeByteSize(input->type().dtype);
  const ir::TensorType &out = group.root->type();
  return bytes + double(out.numElements()) * dtypeByteSize(out.dtype);
}

/// Elements the kernel's parallel loop runs over, and its innermost extent
/// (what the vector width tiles).
struct LoopExtent {
  int64_t elements = 1, inner = 1;
};

LoopExtent loopExtent(const passes::FusionGroup &group) {
  const ir::TensorType &out = group.root->type();
  LoopExtent extent{std::max<int64_t>(1, out.numElements()),
                    out.shape.empty() ? 1 : std::max<int64_t>(1, out.shape.back())};
  // Reductions and row kernels vectorize along the anchor's input rows.
  if (group.anchor != nullptr && group.anchor->numOperands() > 0) {
    const ir::TensorType &in = group.anchor->operand(0)->type();
    extent.elements = std::max<int64_t>(extent.elements, in.numElements());
    if (!in.shape.empty())
      extent.inner = std::max<int64_t>(1, in.shape.back());
  }
  return extent;
}

/// A pointwise, reduction, row or pooling kernel on the CPU: the larger of
/// its arithmetic and its memory traffic, with vector-tail waste.
double estimateCpuElementwise(const passes::FusionGroup &group, int vectorWidth,
                              int64_t minParallelWork, const codegen::CpuTarget &target,
                              double extraFactor) {
  LoopExtent extent = loopExtent(group);
  int threads = extent.elements >= minParallelWork ? std::max(1, target.cores) : 1;
  int lanes = std::max(1, target.f32Lanes());
  int vw = std::max(1, vectorWidth);
  double tail = double(extent.inner) / double(roundUp(extent.inner, vw));
  // Up to four registers of partial results hide the latency of dependent adds.
  double ilp = std::min(4.0, double(vw) / lanes) / 4.0;
  double perCore = kCpuClockHz * lanes * (0.5 + 0.5 * ilp);
  double flops = std::max<double>(1, double(compiler::groupFlops(group)));
  double compute = flops / (perCore * threads * std::max(0.05, tail));
  double memory = cpuMemorySeconds(groupBytes(group), threads);
  return std::max(compute, memory) * extraFactor + (threads > 1 ? kForkJoinSeconds : 0);
}

double estimateCpu(const ir::Graph &graph, const passes::FusionGroup &group,
                   const lower::Schedule &schedule, const codegen::CpuTarget &target) {
  (void)graph;
  if (const auto *s = std::get_if<MatMulSchedule>(&schedule)) {
    if (group.anchor == nullptr || group.anchor->kind() != ir::OpKind::MatMul)
      return kInfeasibleSeconds;
    return estimateCpuGemmSeconds(lower::matMulGemmShape(*group.anchor), *s, target);
  }
  if (const auto *s = std::get_if<lower::Conv2DSchedule>(&schedule)) {
    const ir::Node *conv = convAnchor(group);
    if (conv == nullptr)
      return kInfeasibleSeconds;
    bool direct = s->algorithm == lower::Conv2DSchedule::Algorithm::Direct;
    MatMulSchedule gemm = s->gemm;
    if (direct)
      gemm.nr = s->ocBlock;
    return estimateCpuGemmSeconds(lower::conv2DGemmShape(*conv, s->algorithm), gemm, target,
                                  direct);
  }
  if (const auto *s = std::get_if<lower::PointwiseSchedule>(&schedule))
    return estimateCpuElementwise(group, s->vectorWidth, s->minParallelWork, target, 1.0);
  if (const auto *s = std::get_if<lower::TransposeSchedule>(&schedule)) {
    // Both tiles (read and written) should share L1; small tiles pay loop overhead.
    double tileBytes = 2.0 * double(s->tile * s->tile) * 4;
    double factor = (1 + 0.5 * overflow(tileBytes, double(target.l1dBytes) / 2)) *
                    (1 + 4.0 / double(std::max<int64_t>(s->tile, 1)));
    return estimateCpuElementwise(group, 1, s->minParallelWork, target, factor);
  }
  if (const auto *s = std::get_if<lower::ReductionSchedule>(&schedule))
    return estimateCpuElementwise(group, s->vectorWidth, s->minParallelWork, target, 1.0);
  if (const auto *s = std::get_if<lower::RowNormSchedule>(&schedule))
    return estimateCpuElementwise(group, s->vectorWidth, s->minParallelWork, target, 1.0);
  if (const auto *s = std::get_if<lower::PoolingSchedule>(&schedule))
    return estimateCpuElementwise(group, s->vectorWidth, s->minParallelWork, target, 1.0);
  if (std::holds_alternative<lower::NoSchedule>(schedule))
    return 0;
  return kInfeasibleSeconds; // a GPU schedule
}

/// Blocks of `threads` threads needing `sharedBytes` and `registers` each
/// that fit one SM at once (0: none fits).
int64_t blocksPerSm(int64_t threads, int64_t sharedBytes, int64_t registers,
                    const codegen::GpuTarget &target) {
  threads = std::max<int64_t>(threads, 1);
  int64_t blocks = std::min<int64_t>(target.maxBlocksPerSm, target.maxThreadsPerSm / threads);
  if (sharedBytes > 0)
    blocks = std::min<int64_t>(blocks, target.sharedBytesPerSm / sharedBytes);
  blocks = std::min<int64_t>(blocks, target.registersPerSm / std::max<int64_t>(1, registers * threads));
  if (threads > target.maxThreadsPerBlock || sharedBytes > target.maxSharedBytesPerBlock())
    return 0;
  return std::max<int64_t>(blocks, 0);
}

/// A memory-bound GPU kernel of `threadsPerBlock` threads each handling
/// `elementsPerThread` elements in vectors of `vectorWidth`.
double estimateGpuElementwise(const passes::FusionGroup &group, int threadsPerBlock,
                              int vectorWidth, int elementsPerThread, int64_t sharedBytes,
                              const codegen::GpuTarget &target) {
  LoopExtent extent = loopExtent(group);
  int64_t perBlock = int64_t(std::max(1, threadsPerBlock)) * std::max(1, vectorWidth) *
                     std::max(1, elementsPerThread);
  int64_t blocks = ceilDiv(extent.elements, perBlock);
  int64_t resident = blocksPerSm(threadsPerBlock, sharedBytes, 32, target);
  if (resident == 0)
    return kInfeasibleSeconds;
  double waves = lower::tile_score::waveEfficiency(blocks, target.numSms * resident);
  double occupancy = double(resident * threadsPerBlock) / target.maxThreadsPerSm;
  // Wide accesses need fewer transactions; half occupancy already saturates DRAM.
  double access = vectorWidth >= 4 ? 1.0 : 0.6 + 0.1 * vectorWidth;
  double efficiency = std::min(1.0, 2 * occupancy) * access * std::max(waves, 0.05);
  double tail = double(extent.inner) / double(roundUp(extent.inner, std::max(1, vectorWidth)));
  return groupBytes(group) / (kGpuMemoryBytesPerSecond * efficiency * tail) + kGpuLaunchSeconds;
}

double estimateGpu(const passes::FusionGroup &group, const lower::Schedule &schedule,
                   const codegen::GpuTarget &target) {
  if (const auto *s = std::get_if<lower::GpuMatMulSchedule>(&schedule))
    return estimateGpuGemmSeconds(lower::gpuContractionGemmShape(group), *s, target);
  if (const auto *s = std::get_if<lower::GpuConv2DSchedule>(&schedule))
    return estimateGpuGemmSeconds(lower::gpuContractionGemmShape(group), s->gemm, target);
  if (const auto *s = std::get_if<lower::GpuPointwiseSchedule>(&schedule))
    return estimateGpuElementwise(group, s->threadsPerBlock, s->vectorWidth,
                                  s->elementsPerThread, 0, target);
  if (const auto *s = std::get_if<lower::GpuTransposeSchedule>(&schedule))
    return estimateGpuElementwise(group, s->tile * s->rowsPerPass, 1, s->tile / std::max(1, s->rowsPerPass),
                                  int64_t(s->tile) * (s->tile + 1) * 4, target);
  if (const auto *s = std::get_if<lower::GpuReductionSchedule>(&schedule))
    return estimateGpuElementwise(group, s->threadsPerBlock / std::max(1, s->rowsPerBlock),
                                  s->vectorWidth, 1, 0, target);
  if (const auto *s = std::get_if<lower::GpuRowNormSchedule>(&schedule))
    return estimateGpuElementwise(group, s->threadsPerBlock / std::max(1, s->rowsPerBlock),
                                  s->vectorWidth, 1, 0, target);
  if (const auto *s = std::get_if<lower::GpuPoolingSchedule>(&schedule))
    return estimateGpuElementwise(group, s->threadsPerBlock, 1, 1, 0, target);
  if (std::holds_alternative<lower::NoSchedule>(schedule))
    return 0;
  return kInfeasibleSeconds; // a CPU schedule
}

} // namespace

double estimateCpuGemmSeconds(const lower::GemmShape &shape, const MatMulSchedule &schedule,
                              const codegen::CpuTarget &target, bool directConv) {
  if (schedule.mr < 1 || schedule.nr < 1 || schedule.mc < 1 || schedule.nc < 1 ||
      schedule.kc < 1 || schedule.vectorWidth < 1)
    return kInfeasibleSeconds;
  MatMulSchedule s = lower::clampGemmSchedule(schedule, shape);
  double batch = double(std::max<int64_t>(shape.batch, 1));
  int64_t m = std::max<int64_t>(shape.m, 1), n = std::max<int64_t>(shape.n, 1),
          k = std::max<int64_t>(shape.k, 1);
  double bytes = dtypeByteSize(shape.accumulate);
  int cores = std::max(1, target.cores);
  int lanes = lower::accumulateLanes(shape.accumulate, target);

  // The register tile: vectors of `lanes` along n; loads per multiply-add and
  // independent accumulators decide how close the micro-kernel gets to peak.
  double vectors = std::max(1.0, double(s.nr) / lanes);
  double vectorUse = double(std::min<int64_t>(s.vectorWidth, lanes)) / lanes;
  double intensity = std::min(double(s.mr) * vectors / (double(s.mr) + vectors), 2.4) / 2.4;
  double latency = std::min(double(s.mr) * vectors / 8.0, 1.0);
  double tileEfficiency = std::max(0.05, vectorUse * intensity * latency);
  if (double(s.mr) * vectors + vectors + 1 > lower::vectorRegisters(target))
    tileEfficiency /= 2; // accumulators spill

  // The parallel split. Cores are busy in proportion to the work of a round
  // over the work of its largest task: a ragged last panel or row block
  // leaves its core idle for the rest of the round.
  int threads = 1;
  int64_t forkJoins = 0;
  int64_t rowBlocks = ceilDiv(m, s.mc), panels = ceilDiv(n, s.nc), kBlocks = ceilDiv(k, s.kc);
  int64_t panelColumns = std::min(s.nc, roundUp(n, s.nr));
  double busyCores = 1.0;
  switch (s.parallel) {
  case Parallel::Serial: break;
  case Parallel::Outer: {
    // (batch, column panel) tasks of up to nc columns each, every row.
    int64_t tasks = int64_t(batch) * panels;
    threads = cores;
    forkJoins = 1;
    busyCores = batch * double(n) / (double(ceilDiv(tasks, cores)) * double(panelColumns));
    break;
  }
  case Parallel::Inner: {
    // Per panel: (row block x column chunk) tasks.
    int64_t chunks = lower::innerColumnChunks(rowBlocks, ceilDiv(s.nc, s.nr), cores);
    int64_t tasks = rowBlocks * chunks;
    int64_t chunkColumns = roundUp(ceilDiv(panelColumns, chunks), s.nr);
    threads = cores;
    forkJoins = int64_t(batch) * panels * kBlocks * 2; // pack B, then compute
    busyCores = double(m) * double(std::min(n, panelColumns)) /
                (double(ceilDiv(tasks, cores)) * double(std::min(m, s.mc)) *
                 double(chunkColumns));
    break;
  }
  }
  busyCores = std::clamp(busyCores, 1.0 / cores, double(cores));

  double peakPerCore = kCpuClockHz * lanes * kCpuFmaPipes * 2;
  double paddedFlops = 2 * batch * double(roundUp(m, s.mr)) * double(roundUp(n, s.nr)) * double(k);
  double compute = paddedFlops / (peakPerCore * busyCores * tileEfficiency);

  // Cache blocks: a kc x nr strip of packed B in L1, the mc x kc A block in
  // L2, the kc x nc B panel in L3 (a core's share when each task packs its own).
  double l3Share = s.parallel == Parallel::Outer ? double(target.l3Bytes) / cores
                                                 : double(target.l3Bytes);
  double cacheFactor = 1 + 0.25 * overflow(double(s.kc * s.nr) * bytes, double(target.l1dBytes)) +
                       0.5 * overflow(double(s.mc * s.kc) * bytes, double(target.l2Bytes)) +
                       0.35 * overflow(double(s.kc * s.nc) * bytes, l3Share);
  if (!s.packA || directConv)
    compute *= 1.15; // A read strided by the micro-kernel

  // Traffic: B packed once; A packed once per column panel; the output tile
  // read and written once per K block.
  double packBytes = 2 * batch * double(k) * double(n) * bytes;
  if (s.packA && !directConv)
    packBytes += 2 * batch * double(m) * double(k) * double(panels) * bytes;
  double outputBytes = 2 * batch * double(m) * double(n) * bytes * double(kBlocks);
  double traffic = cpuMemorySeconds(packBytes + outputBytes, threads == 1 ? 1 : int(busyCores));
  return compute * cacheFactor + traffic + double(forkJoins) * kForkJoinSeconds;
}

double estimateGpuGemmSeconds(const lower::GemmShape &shape,
                              const lower::GpuMatMulSchedule &s,
                              const codegen::GpuTarget &target) {
  // Tensor-core schedules have no per-thread register tile (threadM = threadN = 0).
  const bool tensorCores = s.tensorCores();
  if (s.blockM < 1 || s.blockN < 1 || s.blockK < 1 ||
      (!tensorCores && (s.threadM < 1 || s.threadN < 1)))
    return kInfeasibleSeconds;
  using namespace lower::tile_score;
  int64_t m = std::max<int64_t>(shape.m, 1), n = std::max<int64_t>(shape.n, 1),
          k = std::max<int64_t>(shape.k, 1), batch = std::max<int64_t>(shape.batch, 1);
  int64_t threads = tensorCores ? lower::gpuMmaThreads(s) : lower::gpuGemmThreads(s);
  int64_t shared = tensorCores ? lower::gpuMmaSharedBytes(s, shape.operandDtype)
                               : lower::gpuGemmSharedBytes(s, shape.accumulate);
  // Accumulators per thread plus addressing and fragments: a warp's tile over 32 lanes, a
  // warpgroup's over 128 (whose operands stay in shared memory).
  int64_t registers = !tensorCores ? int64_t(s.threadM) * s.threadN + s.threadM + s.threadN + 24
                      : s.wgmma    ? int64_t(s.warpM) * s.warpN / 128 + 40
                                   : int64_t(s.warpM) * s.warpN / target.warpSize + 64;
  int64_t resident = blocksPerSm(threads, shared, registers, target);
  if (resident == 0)
    return kInfeasibleSeconds;
  int64_t splitK = std::max(1, s.splitK);
  int64_t blocks = ceilDiv(m, s.blockM) * ceilDiv(n, s.blockN) * batch * splitK;
  // Whole waves of resident blocks, each block computing its padded tile: this
  // charges both the tile waste at the edges and the last wave's idle SMs.
  int64_t waves = ceilDiv(blocks, target.numSms * resident);
  double blockFlops = 2.0 * s.blockM * s.blockN * double(roundUp(ceilDiv(k, splitK), s.blockK));
  double occupancy = double(resident * threads) / target.maxThreadsPerSm;
  double latencyHiding = std::min(1.0, 4 * occupancy);
  double operandReuse = std::min(1.0, 1.5 * reuse(s.blockM, s.blockN));
  double pipelining = s.stages >= 2 ? 1.0 : 0.8;
  double smPeak = kGpuLanesPerSm * 2 * kGpuClockHz * (s.tensorCores() ? kGpuTensorCoreSpeedup : 1.0);
  double compute = double(waves) * double(resident) * blockFlops /
                   (smPeak * latencyHiding * operandReuse * pipelining);
  double splitKBytes =
      s.splitK > 1 ? 2.0 * double(batch * m * n) * s.splitK * dtypeByteSize(shape.accumulate) : 0;
  return compute + splitKBytes / kGpuMemoryBytesPerSecond + kGpuLaunchSeconds;
}

double estimateSeconds(const ir::Graph &graph, const passes::FusionGroup &group,
                       const lower::Schedule &schedule, const compiler::LoweringTarget &target) {
  if (const auto *gpu = std::get_if<codegen::GpuTarget>(&target))
    return estimateGpu(group, schedule, *gpu);
  return estimateCpu(graph, group, schedule, std::get<codegen::CpuTarget>(target));
}

std::vector<size_t> rankByCost(const ir::Graph &graph, const passes::FusionGroup &group,
                               std::span<const lower::Schedule> candidates,
                               const compiler::LoweringTarget &target) {
  std::vector<double> estimates;
  for (const lower::Schedule &schedule : candidates) {
    double seconds = estimateSeconds(graph, group, schedule, target);
    // NaN would break the strict weak order.
    estimates.push_back(std::isfinite(seconds) ? seconds : kInfeasibleSeconds);
  }
  std::vector<size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return estimates[a] < estimates[b]; });
  return order;
}

} // namespace kiln::tuning
