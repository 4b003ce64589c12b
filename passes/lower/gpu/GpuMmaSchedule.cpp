// Legality, the heuristic default and the search space of tensor-core GEMM schedules.
#include "passes/lower/gpu/GpuMmaSchedule.h"

#include "ir/kernel/MmaLayout.h"
#include "passes/lower/gpu/TileScore.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::lower {

namespace {

using namespace tile_score;

/// Elements in one 16-byte chunk of shared memory (the unit of the swizzle and of ldmatrix rows).
int64_t chunkElements(DType dtype) { return 16 / dtypeByteSize(dtype); }

bool isPowerOfTwo(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

Expected<void> illegal(const GpuMatMulSchedule &s, std::string_view why) {
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("tensor-core schedule bm={} bn={} bk={} wm={} wn={} stages={} "
                               "vw={}: {}",
                               s.blockM, s.blockN, s.blockK, s.warpM, s.warpN, s.stages,
                               s.vectorWidth, why));
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
  return int64_t(s.stages) * (int64_t(s.blockM) * s.blockK + int64_t(s.blockK) * s.blockN) *
         dtypeByteSize(operandDtype);
}

int64_t gpuMmaThreads(const GpuMatMulSchedule &s) {
  if (s.warpM <= 0 || s.warpN <= 0)
    return 0;
  return int64_t(s.blockM / s.warpM) * (s.blockN / s.warpN) * 32;
}

Expected<void> checkGpuMmaSchedule(const GpuMatMulSchedule &s, const GemmShape &shape,
                                   const codegen::GpuTarget &target) {
  std::optional<kir::MmaKind> kind = gpuMmaKindFor(shape, target);
  if (!kind)
    return illegal(s, fmt::format("no tensor-core product for {} operands accumulating in {} on "
                                  "{} (dense f16/bf16, or f32 with allow_tf32, on sm_80+)",
                                  dtypeName(shape.operandDtype), dtypeName(shape.accumulate),
                                  target.archName()));
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
  if (s.vectorWidth <= 0 || 16 % (s.vectorWidth * dtypeByteSize(dtype)) != 0 ||
      s.vectorWidth * dtypeByteSize(dtype) < 4)
    return illegal(s, "vectorWidth must copy 4, 8 or 16 bytes");
  if (s.stages < 2 || s.stages > 4)
    return illegal(s, "stages must be 2, 3 or 4");
  if (s.splitK != 1)
    return illegal(s, "splitK must be 1 (split-K is not implemented)");
  int64_t threads = gpuMmaThreads(s);
  if (threads > target.maxThreadsPerBlock)
    return illegal(s, fmt::format("{} threads exceed the {} a block may have", threads,
                                  target.maxThreadsPerBlock));
  int64_t shared = gpuMmaSharedBytes(s, dtype);
  if (shared > target.staticSharedBytesPerBlock)
    return illegal(s, fmt::format("{} bytes of shared tiles exceed the {} of static shared "
                                  "memory",
                                  shared, target.staticSharedBytesPerBlock));
  if (fragmentRegisters(s, info) > 168)
    return illegal(s, fmt::format("{} accumulator and fragment registers per thread exceed 168",
                                  fragmentRegisters(s, info)));
  return {};
}

GpuMatMulSchedule defaultGpuMmaSchedule(const GemmShape &shape,
                                        const codegen::GpuTarget &target) {
  std::optional<kir::MmaKind> kind = gpuMmaKindFor(shape, target);
  KILN_CHECK(kind, "defaultGpuMmaSchedule needs a GEMM that runs on tensor cores");
  DType dtype = kir::mmaShapeInfo(*kind).operandDtype;
  GpuMatMulSchedule best;
  double bestScore = -1.0;
  const std::pair<int, int> tiles[] = {{128, 128}, {128, 64}, {64, 128}, {64, 64},
                                       {64, 32},   {32, 64},  {32, 32}};
  for (auto [blockM, blockN] : tiles) {
    int64_t blocks = shape.batch * ceilDivide(shape.m, blockM) * ceilDivide(shape.n, blockN);
    double score = usefulFraction(shape.m, blockM) * usefulFraction(shape.n, blockN) *
                   waveEfficiency(blocks, target.numSms) * reuse(blockM, blockN);
    if (score > bestScore + 1e-9) {
      bestScore = score;
      best.blockM = blockM;
      best.blockN = blockN;
    }
  }
  // Four warps, each a quarter of the block.
  best.warpM = std::max(16, best.blockM / 2);
  best.warpN = std::max(16, best.blockN / 2);
  best.threadM = best.threadN = 0;
  // 64 bytes of each K row per stage: two 16-bit k steps, or two tf32 ones.
  best.blockK = 64 / dtypeByteSize(dtype);
  best.vectorWidth = 16 / dtypeByteSize(dtype);
  best.splitK = 1;
  int64_t kTiles = ceilDivide(std::max<int64_t>(shape.k, 1), best.blockK);
  best.stages = 2;
  for (int stages = 4; stages > 2; --stages) {
    GpuMatMulSchedule deeper = best;
    deeper.stages = stages;
    if (kTiles >= stages && checkGpuMmaSchedule(deeper, shape, target)) {
      best = deeper;
      break;
    }
  }
  return best;
}

std::vector<GpuMatMulSchedule> gpuMmaScheduleSpace(const GemmShape &shape,
                                                   const codegen::GpuTarget &target) {
  if (!gpuMmaKindFor(shape, target))
    return {};
  GpuMatMulSchedule first = defaultGpuMmaSchedule(shape, target);
  std::vector<GpuMatMulSchedule> space{first};
  for (int blockM : {32, 64, 128, 256})
    for (int blockN : {32, 64, 128, 256})
      for (int warpM : {16, 32, 64})
        for (int warpN : {16, 32, 64})
          for (int blockK : {16, 32, 64})
            for (int stages : {2, 3, 4}) {
              GpuMatMulSchedule s = first;
              s.blockM = blockM;
              s.blockN = blockN;
              s.warpM = warpM;
              s.warpN = warpN;
              s.blockK = blockK;
              s.stages = stages;
              bool same = s.blockM == first.blockM && s.blockN == first.blockN &&
                          s.warpM == first.warpM && s.warpN == first.warpN &&
                          s.blockK == first.blockK && s.stages == first.stages;
              if (same || gpuMmaThreads(s) > 512 || !checkGpuMmaSchedule(s, shape, target))
                continue;
              space.push_back(s);
            }
  return space;
}

} // namespace kiln::lower
