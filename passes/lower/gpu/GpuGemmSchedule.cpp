// Legality, the heuristic default and the search space of GPU GEMM schedules.
#include "passes/lower/gpu/GpuGemmSchedule.h"

#include "passes/lower/gpu/GemmSplitK.h"
#include "passes/lower/gpu/GpuMmaSchedule.h"
#include "passes/lower/gpu/TileScore.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::lower {

namespace {

using namespace tile_score;

/// 32-bit registers one accumulator takes.
int64_t registerWords(DType accumulate) {
  return std::max<int64_t>(1, dtypeByteSize(accumulate) / 4);
}

/// Accumulator registers a thread may hold: the rest of the 255 go to the A and B fragments,
/// the prefetched tiles and addressing.
constexpr int64_t kMaxAccumulatorRegisters = 128;

/// An estimate of the registers one thread of the GEMM template holds at its peak: the
/// accumulators, one k's A and B fragments, the next tile's elements held across the compute
/// with double buffering, and the addressing of each tile element the thread loads (an A
/// element costs as much as conv2d's implicit im2col needs: image, row, column and bounds;
/// a B element an offset and a predicate), plus indices, pointers and loop counters.
int64_t estimatedRegisters(const GpuMatMulSchedule &s, DType accumulate) {
  int64_t threads = gpuGemmThreads(s);
  int64_t words = registerWords(accumulate);
  int64_t aLoads = ceilDiv(int64_t(s.blockM) * s.blockK, threads);
  int64_t bLoads = ceilDiv(int64_t(s.blockK) * s.blockN, threads);
  int64_t prefetched = s.stages == 2 ? (aLoads + bLoads) * words : 0;
  return int64_t(s.threadM) * s.threadN * words + (int64_t(s.threadM) + s.threadN) * words +
         prefetched + 4 * aLoads + 2 * bLoads + 16;
}

/// The thread tile of a block tile: the largest square tile giving 128 to 256 threads, else
/// the one with the most threads up to 256.
void chooseThreadTile(GpuMatMulSchedule &s) {
  int best = 0;
  int64_t bestThreads = 0;
  for (int t : {8, 4, 2}) {
    int tm = std::min<int>(t, s.blockM), tn = std::min<int>(t, s.blockN);
    int64_t threads = int64_t(s.blockM / tm) * (s.blockN / tn);
    if (threads >= 128 && threads <= 256) {
      s.threadM = tm;
      s.threadN = tn;
      return;
    }
    if (threads <= 256 && threads > bestThreads) {
      best = t;
      bestThreads = threads;
    }
  }
  if (best == 0)
    best = 8;
  s.threadM = std::min<int>(best, s.blockM);
  s.threadN = std::min<int>(best, s.blockN);
}

} // namespace

int64_t gpuGemmSharedBytes(const GpuMatMulSchedule &s, DType accumulate) {
  return int64_t(s.stages) * s.blockK * (int64_t(s.blockM) + s.blockN) *
         dtypeByteSize(accumulate);
}

int64_t gpuGemmThreads(const GpuMatMulSchedule &s) {
  return int64_t(s.blockM / s.threadM) * (s.blockN / s.threadN);
}

int64_t gpuRegisterBudget(int64_t threads, const codegen::GpuTarget &target) {
  constexpr int64_t kRegisterGranularity = 8; // ptxas allocates per thread in units of 8
  int64_t perThread = target.registersPerSm / std::max<int64_t>(threads, 1);
  perThread = perThread / kRegisterGranularity * kRegisterGranularity;
  return std::min<int64_t>(perThread, target.maxRegistersPerThread);
}

Expected<void> checkGpuGemmSchedule(const GpuMatMulSchedule &s, DType accumulate,
                                    const codegen::GpuTarget &target) {
  auto invalid = [&](std::string what) {
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("GPU GEMM schedule: {} (schedule bm={} bn={} bk={} tm={} tn={} "
                                 "stages={} vw={} splitk={})",
                                 what, s.blockM, s.blockN, s.blockK, s.threadM, s.threadN,
                                 s.stages, s.vectorWidth, s.splitK));
  };
  if (s.groupM != 1)
    return invalid("the grouped tile order (groupM) belongs to tensor-core schedules");
  for (auto [name, value] : {std::pair{"blockM", s.blockM}, {"blockN", s.blockN},
                             {"blockK", s.blockK}, {"threadM", s.threadM},
                             {"threadN", s.threadN}})
    if (value < 1)
      return invalid(fmt::format("{} must be positive, got {}", name, value));
  if (s.blockM % s.threadM != 0)
    return invalid(fmt::format("threadM ({}) must divide blockM ({})", s.threadM, s.blockM));
  if (s.blockN % s.threadN != 0)
    return invalid(fmt::format("threadN ({}) must divide blockN ({})", s.threadN, s.blockN));
  int64_t threads = gpuGemmThreads(s);
  if (threads > target.maxThreadsPerBlock)
    return invalid(fmt::format("blockM/threadM * blockN/threadN gives {} threads per block; at "
                               "most {} are allowed",
                               threads, target.maxThreadsPerBlock));
  int64_t accumulatorRegisters = int64_t(s.threadM) * s.threadN * registerWords(accumulate);
  if (accumulatorRegisters > kMaxAccumulatorRegisters)
    return invalid(fmt::format("threadM x threadN needs {} accumulator registers per thread; at "
                               "most {}",
                               accumulatorRegisters, kMaxAccumulatorRegisters));
  if (s.stages != 1 && s.stages != 2)
    return invalid(fmt::format("stages must be 1 or 2 (double buffering), got {}", s.stages));
  int64_t registers = estimatedRegisters(s, accumulate);
  int64_t budget = gpuRegisterBudget(threads, target);
  if (registers > budget)
    return invalid(fmt::format("needs about {} registers per thread (accumulators, fragments, "
                               "prefetched tile elements and addressing); {} threads per block "
                               "may use at most {}",
                               registers, threads, budget));
  if (s.vectorWidth != 1 && s.vectorWidth != 2 && s.vectorWidth != 4 && s.vectorWidth != 8)
    return invalid(fmt::format("vectorWidth must be 1, 2, 4 or 8, got {}", s.vectorWidth));
  // Whether K splits evenly enough is the problem's question (lowerGpuGemm, splitKProblem).
  if (s.splitK < 1 || s.splitK > kMaxSplitK)
    return invalid(fmt::format("splitK must be 1 to {}, got {}", kMaxSplitK, s.splitK));
  int64_t shared = gpuGemmSharedBytes(s, accumulate);
  if (shared > target.staticSharedBytesPerBlock)
    return invalid(fmt::format("blockM, blockN, blockK and stages need {} bytes of shared memory "
                               "per block; at most {}",
                               shared, target.staticSharedBytesPerBlock));
  return {};
}

GpuMatMulSchedule defaultGpuGemmSchedule(const GemmShape &shape,
                                         const codegen::GpuTarget &target) {
  GpuMatMulSchedule best;
  double bestScore = -1.0;
  int64_t accBytes = dtypeByteSize(shape.accumulate);
  for (int blockM : {128, 64, 32, 16})
    for (int blockN : {128, 64, 32, 16}) {
      // 16-wide tiles only for extents that small (a depthwise conv's single output channel).
      if ((blockM == 16 && shape.m > 16) || (blockN == 16 && shape.n > 16))
        continue;
      int64_t blocks =
          shape.batch * ceilDiv(shape.m, blockM) * ceilDiv(shape.n, blockN);
      double score = usefulFraction(shape.m, blockM) * usefulFraction(shape.n, blockN) *
                     waveEfficiency(blocks, target.numSms) * reuse(blockM, blockN);
      if (score > bestScore + 1e-9) {
        bestScore = score;
        best.blockM = blockM;
        best.blockN = blockN;
      }
    }
  chooseThreadTile(best);
  best.vectorWidth = accBytes >= 8 ? 2 : 4;
  best.splitK = 1;
  best.blockK = shape.k <= 8 ? 8 : 16;
  best.stages = ceilDiv(shape.k, best.blockK) > 1 ? 2 : 1;
  while (!checkGpuGemmSchedule(best, shape.accumulate, target)) {
    if (best.blockK > 8)
      best.blockK /= 2;
    else if (best.stages > 1)
      best.stages = 1;
    else if (best.threadM > 2 || best.threadN > 2) {
      best.threadM = std::max(2, best.threadM / 2);
      best.threadN = std::max(2, best.threadN / 2);
    } else
      break;
  }
  // Split K when the output tiles leave SMs idle (GemmSplitK.h), with stages for the split.
  best.splitK = chooseSplitK(gemmOutputBlocks(best, shape), best.blockK, shape, target.numSms);
  if (best.stages == 2 && ceilDiv(ceilDiv(shape.k, best.blockK), best.splitK) < 2)
    best.stages = 1;
  return best;
}

std::vector<GpuMatMulSchedule> gpuGemmScheduleSpace(const GemmShape &shape,
                                                    const codegen::GpuTarget &target) {
  GpuMatMulSchedule first = defaultGpuGemmSchedule(shape, target);
  std::vector<GpuMatMulSchedule> space{first};
  for (int blockM : {32, 64, 128})
    for (int blockN : {32, 64, 128})
      for (int thread : {2, 4, 8})
        for (int blockK : {8, 16, 32})
          for (int stages : {1, 2}) {
            GpuMatMulSchedule s{blockM, blockN, blockK, thread, thread, stages,
                                first.vectorWidth, 1};
            if (gpuGemmThreads(s) < target.warpSize)
              continue;
            if (!checkGpuGemmSchedule(s, shape.accumulate, target) || s == first)
              continue;
            space.push_back(s);
          }
  addSplitKSchedules(space, first, shape, target, [&](const GpuMatMulSchedule &s) {
    return !splitKProblem(s.splitK, shape.k, s.blockK);
  });
  // The default may be split; the same tile unsplit belongs in the space too.
  GpuMatMulSchedule unsplitDefault = first;
  unsplitDefault.splitK = 1;
  if (first.splitK > 1 &&
      std::none_of(space.begin(), space.end(),
                   [&](const GpuMatMulSchedule &s) { return s == unsplitDefault; }))
    space.push_back(unsplitDefault);
  return space;
}

} // namespace kiln::lower
