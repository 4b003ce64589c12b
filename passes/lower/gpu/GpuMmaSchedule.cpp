// Legality, the heuristic default and the search space of tensor-core GEMM schedules.
#include "passes/lower/gpu/GpuMmaSchedule.h"

#include "ir/kernel/MmaLayout.h"
#include "passes/lower/gpu/GemmSplitK.h"
#include "passes/lower/gpu/GpuGemmSchedule.h"
#include "passes/lower/gpu/GpuWgmmaSchedule.h"
#include "passes/lower/gpu/TileScore.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>

namespace kiln::lower {

namespace {

using namespace tile_score;

/// Elements in one 16-byte chunk of shared memory (the unit of the swizzle and of ldmatrix rows).
int64_t chunkElements(DType dtype) { return 16 / dtypeByteSize(dtype); }

bool isPowerOfTwo(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

Expected<void> illegal(const GpuMatMulSchedule &s, std::string_view why) {
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("tensor-core schedule bm={} bn={} bk={} wm={} wn={} stages={} "
                               "vw={} splitk={}: {}",
                               s.blockM, s.blockN, s.blockK, s.warpM, s.warpN, s.stages,
                               s.vectorWidth, s.splitK, why));
}

/// 32-bit registers a thread holds for accumulators and one k step's fragments.
int64_t fragmentRegisters(const GpuMatMulSchedule &s, const kir::MmaShapeInfo &info) {
  int64_t tilesM = s.warpM / info.m, tilesN = s.warpN / info.n;
  int64_t operandBytes = dtypeByteSize(info.operandDtype);
  int64_t aWords = tilesM * info.aElements * operandBytes / 4;
  int64_t bWords = tilesN * info.bElements * operandBytes / 4;
  return tilesM * tilesN * info.cElements + aWords + bWords;
}

} // namespace

int64_t gemmOutputBlocks(const GpuMatMulSchedule &s, const GemmShape &shape) {
  return shape.batch * ceilDiv(shape.m, s.blockM) * ceilDiv(shape.n, s.blockN);
}

double estimatedGemmTime(const GpuMatMulSchedule &s, const GemmShape &shape, int64_t numSms) {
  int64_t kTiles = ceilDiv(std::max<int64_t>(shape.k, 1), s.blockK);
  SplitKEstimate estimate =
      estimateSplitK(gemmOutputBlocks(s, shape), kTiles, s.splitK, shape, numSms);
  return estimate.compute * double(s.blockM + s.blockN) / 256.0 + estimate.overhead;
}

std::optional<kir::MmaKind> gpuMmaKindFor(const GemmShape &shape,
                                          const codegen::GpuTarget &target) {
  if (target.sm < 80 || !shape.denseOperands || shape.accumulate != DType::F32)
    return std::nullopt;
  std::optional<kir::MmaKind> kind;
  switch (shape.operandDtype) {
  case DType::F16: kind = kir::MmaKind::F16_M16N8K16; break;
  case DType::BF16: kind = kir::MmaKind::BF16_M16N8K16; break;
  case DType::F32:
    if (shape.allowTf32)
      kind = kir::MmaKind::TF32_M16N8K8;
    break;
  case DType::F8E4M3:
    if (target.sm >= kir::mmaShapeInfo(kir::MmaKind::E4M3_M16N8K32).minSm)
      kind = kir::MmaKind::E4M3_M16N8K32;
    break;
  default: break;
  }
  if (!kind || gpuMmaCopyLanes(shape.aRun, shape.operandDtype) == 0 ||
      gpuMmaCopyLanes(shape.bRun, shape.operandDtype) == 0)
    return std::nullopt;
  return kind;
}

int gpuMmaCopyLanes(int64_t run, DType dtype) {
  int bytes = dtypeByteSize(dtype);
  for (int copyBytes : {16, 8, 4}) {
    int lanes = copyBytes / bytes;
    if (lanes >= 1 && run > 0 && run % lanes == 0)
      return lanes;
  }
  return 0;
}

int64_t gpuMmaSharedBytes(const GpuMatMulSchedule &s, DType operandDtype) {
  // With bulk copies each stage has a full and an empty mbarrier of 8 bytes.
  return int64_t(s.stages) * (int64_t(s.blockM) * s.blockK + int64_t(s.blockK) * s.blockN) *
             dtypeByteSize(operandDtype) +
         (s.tma ? 16 * int64_t(s.stages) : 0);
}

int64_t gpuMmaThreads(const GpuMatMulSchedule &s) {
  if (s.warpM <= 0 || s.warpN <= 0)
    return 0;
  // With bulk tensor copies one more warpgroup produces the tiles.
  return int64_t(s.blockM / s.warpM) * (s.blockN / s.warpN) * (s.wgmma ? 128 : 32) +
         (s.tma ? 128 : 0);
}

std::optional<std::string> pipelineProblem(const GpuMatMulSchedule &s, const GemmShape &shape,
                                           const codegen::GpuTarget &target, DType dtype) {
  int64_t bytes = dtypeByteSize(dtype);
  if (s.vectorWidth <= 0 || 16 % (s.vectorWidth * bytes) != 0 || s.vectorWidth * bytes < 4)
    return "vectorWidth must copy 4, 8 or 16 bytes";
  if (s.stages < 2 || s.stages > 4)
    return "stages must be 2, 3 or 4";
  if (s.groupM < 1)
    return "groupM (rows of tiles per group of the tile order) must be at least 1";
  if (std::optional<std::string> why = splitKProblem(s.splitK, shape.k, s.blockK))
    return why;
  int64_t threads = gpuMmaThreads(s);
  if (threads > target.maxThreadsPerBlock)
    return fmt::format("{} threads exceed the {} a block may have", threads,
                       target.maxThreadsPerBlock);
  return std::nullopt;
}

std::optional<std::string> registerFileProblem(const GpuMatMulSchedule &s, int64_t heldRegisters,
                                               const codegen::GpuTarget &target) {
  // Addressing, loop counters and descriptors on top of what the thread holds: ptxas needed
  // 26 more than the accumulators for TMA-fed wgmma and squeezed cp.async-fed kernels (wgmma
  // and mma.sync, whose natural use is 50-90 more) into 32 more without spilling, over the
  // 8192^3 bf16 spaces on sm_90a; with less room they spilled or failed.
  int64_t threads = gpuMmaThreads(s);
  int64_t budget = gpuRegisterBudget(threads, target);
  if (heldRegisters + kTensorCoreAddressingRegisters <= budget)
    return std::nullopt;
  return fmt::format("{} registers per thread held (accumulators{}) and about {} for addressing "
                     "exceed the {} each of {} threads may use ({} per SM)",
                     heldRegisters, s.wgmma ? "" : " and fragments",
                     kTensorCoreAddressingRegisters, budget, threads, target.registersPerSm);
}

Expected<void> checkGpuMmaSchedule(const GpuMatMulSchedule &s, const GemmShape &shape,
                                   const codegen::GpuTarget &target) {
  if (s.wgmma)
    return checkGpuWgmmaSchedule(s, shape, target);
  std::optional<kir::MmaKind> kind = gpuMmaKindFor(shape, target);
  if (!kind)
    return illegal(s, fmt::format("no tensor-core product for {} operands accumulating in {} on "
                                  "{} (dense f16/bf16, or f32 with allow_tf32, on sm_80+; "
                                  "f8e4m3 on sm_89+)",
                                  dtypeName(shape.operandDtype), dtypeName(shape.accumulate),
                                  target.archName()));
  if (s.tma || s.persistent)
    return illegal(s, "bulk tensor copies (tma) and persistent grids feed warpgroup products "
                      "(wgmma) only");
  const kir::MmaShapeInfo &info = kir::mmaShapeInfo(*kind);
  DType dtype = info.operandDtype;
  if (s.warpM <= 0 || s.warpN <= 0 || s.warpM % 16 != 0 || s.warpN % 16 != 0)
    return illegal(s, "warpM and warpN must be positive multiples of 16");
  if (s.blockM % s.warpM != 0 || s.blockN % s.warpN != 0)
    return illegal(s, "warpM must divide blockM and warpN blockN");
  if (!isPowerOfTwo(s.blockM) || !isPowerOfTwo(s.blockN) || !isPowerOfTwo(s.blockK))
    return illegal(s, "block tiles must be powers of two (the shared-memory swizzle)");
  if (s.blockK % info.k != 0)
    return illegal(s, fmt::format("blockK must be a multiple of the product's k ({})", info.k));
  int64_t chunk = chunkElements(dtype);
  if (s.blockK < chunk || s.blockM < chunk || s.blockN < chunk)
    return illegal(s, fmt::format("tiles must hold whole 16-byte rows ({} elements)", chunk));
  if (std::optional<std::string> why = pipelineProblem(s, shape, target, dtype))
    return illegal(s, *why);
  // Past the static 48 KiB the tiles come from dynamic shared memory (opt-in, up to the SM's).
  int64_t shared = gpuMmaSharedBytes(s, dtype);
  if (shared > target.maxSharedBytesPerBlock())
    return illegal(s, fmt::format("{} bytes of shared tiles exceed the {} a block may have on {}",
                                  shared, target.maxSharedBytesPerBlock(), target.archName()));
  if (fragmentRegisters(s, info) > 168)
    return illegal(s, fmt::format("{} accumulator and fragment registers per thread exceed 168",
                                  fragmentRegisters(s, info)));
  if (std::optional<std::string> why = registerFileProblem(s, fragmentRegisters(s, info), target))
    return illegal(s, *why);
  return {};
}

GpuMatMulSchedule defaultGpuMmaSchedule(const GemmShape &shape,
                                        const codegen::GpuTarget &target) {
  std::optional<kir::MmaKind> kind = gpuMmaKindFor(shape, target);
  KILN_CHECK(kind, "defaultGpuMmaSchedule needs a GEMM that runs on tensor cores");
  DType dtype = kir::mmaShapeInfo(*kind).operandDtype;
  GpuMatMulSchedule base;
  base.blockK = 64 / dtypeByteSize(dtype); // 64 bytes of each K row per stage
  base.threadM = base.threadN = 0;
  base.vectorWidth = 16 / dtypeByteSize(dtype);
  base.stages = 2;
  const std::pair<int, int> tiles[] = {{128, 128}, {128, 64}, {64, 128}, {64, 64},
                                       {64, 32},   {32, 64},  {32, 32}};
  std::optional<GpuMatMulSchedule> best = leastEstimatedTile(
      base, tiles,
      [](GpuMatMulSchedule &s) { // four warps, each a quarter of the block
        s.warpM = std::max(16, s.blockM / 2);
        s.warpN = std::max(16, s.blockN / 2);
      },
      [](const GpuMatMulSchedule &) { return true; }, shape, target);
  KILN_CHECK(best, "no tensor-core tile for a GEMM that runs on tensor cores");
  // As many stages as the static 48 KiB of shared memory allow (deeper pipelines in dynamic
  // shared memory are in the space; unmeasured, they are not the default).
  return deepestStages(*best, shape, [&](const GpuMatMulSchedule &s) {
    return gpuMmaSharedBytes(s, dtype) <= target.staticSharedBytesPerBlock &&
           checkGpuMmaSchedule(s, shape, target);
  });
}

std::optional<GpuMatMulSchedule>
leastEstimatedTile(const GpuMatMulSchedule &base, std::span<const std::pair<int, int>> tiles,
                   const std::function<void(GpuMatMulSchedule &)> &withTile,
                   const std::function<bool(const GpuMatMulSchedule &)> &legal,
                   const GemmShape &shape, const codegen::GpuTarget &target) {
  int64_t kTiles = ceilDiv(std::max<int64_t>(shape.k, 1), base.blockK);
  std::optional<GpuMatMulSchedule> best;
  double bestTime = 0.0;
  for (auto [blockM, blockN] : tiles)
    for (int splitK = 1; splitK <= kMaxSplitK; ++splitK) {
      GpuMatMulSchedule candidate = base;
      candidate.blockM = blockM;
      candidate.blockN = blockN;
      candidate.splitK = splitK;
      withTile(candidate);
      if (splitK > 1 && (gemmOutputBlocks(candidate, shape) >= target.numSms ||
                         splitKProblem(splitK, shape.k, candidate.blockK) ||
                         ceilDiv(kTiles, splitK) < kMinTilesPerSplit))
        continue;
      if (!legal(candidate))
        continue;
      double time = estimatedGemmTime(candidate, shape, target.numSms);
      if (!best || time < bestTime * (1.0 - 1e-9)) {
        bestTime = time;
        best = candidate;
      }
    }
  return best;
}

GpuMatMulSchedule deepestStages(const GpuMatMulSchedule &schedule, const GemmShape &shape,
                                const std::function<bool(const GpuMatMulSchedule &)> &fits) {
  int64_t kTiles = ceilDiv(std::max<int64_t>(shape.k, 1), schedule.blockK);
  int64_t splitTiles = ceilDiv(kTiles, schedule.splitK);
  for (int stages = 4; stages > schedule.stages; --stages) {
    GpuMatMulSchedule deeper = schedule;
    deeper.stages = stages;
    if (splitTiles >= stages && fits(deeper))
      return deeper;
  }
  return schedule;
}

int64_t gemmGroupM(const GpuMatMulSchedule &s, const GemmShape &shape,
                   const codegen::GpuTarget &target) {
  int64_t tilesM = ceilDiv(std::max<int64_t>(shape.m, 1), s.blockM);
  return gemmOutputBlocks(s, shape) >= 2 * target.numSms && tilesM > kTileGroupRows
             ? kTileGroupRows
             : 1;
}

void addGroupedSchedule(std::vector<GpuMatMulSchedule> &space, const GemmShape &shape,
                        const codegen::GpuTarget &target) {
  GpuMatMulSchedule other = space.front();
  other.groupM = other.groupM == 1 ? static_cast<int>(kTileGroupRows) : 1;
  if (other.groupM != 1 && gemmGroupM(other, shape, target) == 1)
    return; // too few tiles for the order to matter
  space.push_back(other);
}

void addSplitKSchedules(std::vector<GpuMatMulSchedule> &space, const GpuMatMulSchedule &first,
                        const GemmShape &shape, const codegen::GpuTarget &target,
                        const std::function<bool(const GpuMatMulSchedule &)> &legal) {
  size_t unsplit = space.size();
  for (size_t i = 0; i < unsplit; ++i) {
    int64_t blocks = gemmOutputBlocks(space[i], shape);
    if (space[i].splitK != 1 || blocks >= target.numSms)
      continue;
    for (int splitK : {2, 4, 8, 16}) {
      GpuMatMulSchedule s = space[i];
      s.splitK = splitK;
      if (s == first || blocks * splitK > 2 * target.numSms ||
          ceilDiv(ceilDiv(shape.k, s.blockK), splitK) < kMinTilesPerSplit || !legal(s))
        continue;
      space.push_back(s);
    }
  }
}

std::vector<GpuMatMulSchedule> gpuMmaScheduleSpace(const GemmShape &shape,
                                                   const codegen::GpuTarget &target) {
  std::optional<kir::MmaKind> kind = gpuMmaKindFor(shape, target);
  if (!kind)
    return {};
  DType dtype = kir::mmaShapeInfo(*kind).operandDtype;
  GpuMatMulSchedule first = defaultGpuMmaSchedule(shape, target);
  std::vector<GpuMatMulSchedule> space{first};
  for (int blockM : {32, 64, 128, 256})
    for (int blockN : {32, 64, 128, 256})
      for (int warpM : {16, 32, 64})
        for (int warpN : {16, 32, 64})
          for (int blockK : {16, 32, 64, 128})
            for (int stages : {2, 3, 4}) {
              if (blockK == 128 && dtypeByteSize(dtype) != 1) // 128-byte rows at most
                continue;
              GpuMatMulSchedule s = first;
              s.blockM = blockM;
              s.blockN = blockN;
              s.warpM = warpM;
              s.warpN = warpN;
              s.blockK = blockK;
              s.stages = stages;
              s.splitK = 1;
              if (s == first || gpuMmaThreads(s) > 512 || !checkGpuMmaSchedule(s, shape, target))
                continue;
              space.push_back(s);
            }
  addSplitKSchedules(space, first, shape, target, [&](const GpuMatMulSchedule &s) {
    return static_cast<bool>(checkGpuMmaSchedule(s, shape, target));
  });
  addGroupedSchedule(space, shape, target);
  std::vector<GpuMatMulSchedule> warpgroups = gpuWgmmaScheduleSpace(shape, target);
  space.insert(space.end(), warpgroups.begin(), warpgroups.end());
  return space;
}

} // namespace kiln::lower
