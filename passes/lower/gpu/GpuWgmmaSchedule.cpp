// Legality, the default and the search space of warpgroup (wgmma) GEMM schedules.
#include "passes/lower/gpu/GpuWgmmaSchedule.h"

#include "ir/kernel/WgmmaLayout.h"
#include "passes/lower/gpu/GpuMmaSchedule.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::lower {

namespace {

/// The most accumulators a thread holds (f32 registers): a 64 x 256 warpgroup tile.
constexpr int64_t kMaxAccumulators = 128;

Expected<void> illegal(const GpuMatMulSchedule &s, std::string_view why) {
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("wgmma schedule bm={} bn={} bk={} wm={} wn={} stages={} vw={} "
                               "splitk={}: {}",
                               s.blockM, s.blockN, s.blockK, s.warpM, s.warpN, s.stages,
                               s.vectorWidth, s.splitK, why));
}

/// Shared memory the launch reserves: the tiles plus the slack that aligns their base.
int64_t reservedShared(const GpuMatMulSchedule &s, DType dtype) {
  return gpuMmaSharedBytes(s, dtype) + kir::kWgmmaAtomBytes;
}

} // namespace

std::optional<kir::WgmmaKind> gpuWgmmaKindFor(const GemmShape &shape,
                                              const codegen::GpuTarget &target) {
  if (target.sm != 90 || !target.archSpecific || !shape.denseOperands ||
      shape.accumulate != DType::F32 || gpuMmaCopyLanes(shape.aRun, shape.operandDtype) == 0 ||
      gpuMmaCopyLanes(shape.bRun, shape.operandDtype) == 0)
    return std::nullopt;
  switch (shape.operandDtype) {
  case DType::F16: return kir::WgmmaKind::F16_K16;
  case DType::BF16: return kir::WgmmaKind::BF16_K16;
  case DType::F8E4M3:
    // The ISA transposes only 16-bit operands: e4m3 needs K contiguous in both.
    if (shape.aContiguousInK && shape.bContiguousInK)
      return kir::WgmmaKind::E4M3_K32;
    return std::nullopt;
  default: return std::nullopt;
  }
}

Expected<void> checkGpuWgmmaSchedule(const GpuMatMulSchedule &s, const GemmShape &shape,
                                     const codegen::GpuTarget &target) {
  std::optional<kir::WgmmaKind> kind = gpuWgmmaKindFor(shape, target);
  if (!kind)
    return illegal(s, fmt::format("no warpgroup product for {} operands accumulating in {} on {} "
                                  "(sm_90a; f16/bf16, or e4m3 with K contiguous in both)",
                                  dtypeName(shape.operandDtype), dtypeName(shape.accumulate),
                                  target.archName()));
  const kir::WgmmaShapeInfo &info = kir::wgmmaShapeInfo(*kind);
  int64_t bytes = dtypeByteSize(info.operandDtype);
  if (s.warpM <= 0 || s.warpM % kir::kWgmmaM != 0)
    return illegal(s, "warpM must be a positive multiple of 64 (the products' M)");
  if (!kir::isWgmmaN(s.warpN))
    return illegal(s, "warpN must be 8 .. 256 in steps of 8 (the products' N)");
  int64_t panel = kir::kWgmmaRowBytes / bytes; // M/N elements of an MN-major 128-byte row
  if (!shape.bContiguousInK && s.warpN % panel != 0)
    return illegal(s, fmt::format("warpN must be a multiple of {} when B is N-contiguous (whole "
                                  "128-byte panels)",
                                  panel));
  if (s.blockM % s.warpM != 0 || s.blockN % s.warpN != 0)
    return illegal(s, "warpM must divide blockM and warpN blockN");
  if (s.blockK * bytes != kir::kWgmmaRowBytes)
    return illegal(s, fmt::format("blockK must be {} (one 128-byte row of K)", panel));
  if (std::optional<std::string> why = pipelineProblem(s, shape, target, info.operandDtype))
    return illegal(s, *why);
  int64_t accumulators = wgmmaAccumulators(s);
  if (accumulators > kMaxAccumulators)
    return illegal(s, fmt::format("{} accumulators per thread exceed {}", accumulators,
                                  kMaxAccumulators));
  if (s.persistent && !s.tma)
    return illegal(s, "a persistent grid needs tma (a producer warpgroup's bulk copies)");
  if (s.persistent && s.splitK != 1)
    return illegal(s, "a persistent grid does not split K (splitk=1)");
  if (s.tma && !shape.tmaOperands)
    return illegal(s, "bulk tensor copies (tma) need both operands to be plain strided tensors "
                      "(no im2col), each stride a multiple of 16 bytes");
  int64_t shared = reservedShared(s, info.operandDtype);
  if (shared > target.maxSharedBytesPerBlock())
    return illegal(s, fmt::format("{} bytes of shared tiles (with the 1 KiB that aligns them) "
                                  "exceed the {} a block may have on {}",
                                  shared, target.maxSharedBytesPerBlock(), target.archName()));
  // The producer warpgroup of a tma schedule counts: it holds its registers too.
  if (std::optional<std::string> why = registerFileProblem(s, accumulators, target))
    return illegal(s, *why);
  return {};
}

int64_t persistentGridBlocks(const GpuMatMulSchedule &s, DType operandDtype, int64_t tiles,
                             const codegen::GpuTarget &target) {
  // The hardware keeps 1 KiB of an SM's shared memory per resident block besides.
  const int64_t shared = reservedShared(s, operandDtype) + 1024;
  const int64_t threads = gpuMmaThreads(s);
  // What registerFileProblem counts a thread as needing, in ptxas's units of 8.
  const int64_t registers = (wgmmaAccumulators(s) + kTensorCoreAddressingRegisters + 7) / 8 * 8;
  int64_t perSm = target.maxBlocksPerSm;
  perSm = std::min(perSm, target.sharedBytesPerSm / std::max<int64_t>(shared, 1));
  perSm = std::min<int64_t>(perSm, target.maxThreadsPerSm / threads);
  perSm = std::min<int64_t>(perSm, target.registersPerSm / (threads * registers));
  return std::clamp<int64_t>(int64_t(target.numSms) * std::max<int64_t>(perSm, 1), 1,
                             std::max<int64_t>(tiles, 1));
}

GpuMatMulSchedule defaultGpuWgmmaSchedule(const GemmShape &shape,
                                          const codegen::GpuTarget &target) {
  std::optional<kir::WgmmaKind> kind = gpuWgmmaKindFor(shape, target);
  KILN_CHECK(kind, "defaultGpuWgmmaSchedule needs a GEMM that runs on warpgroup products");
  DType dtype = kir::wgmmaShapeInfo(*kind).operandDtype;
  GpuMatMulSchedule base;
  base.wgmma = true;
  base.threadM = base.threadN = 0;
  base.blockK = static_cast<int>(kir::kWgmmaRowBytes / dtypeByteSize(dtype));
  base.vectorWidth = 16 / dtypeByteSize(dtype);
  base.stages = 2;
  // 128 x 64 for outputs 64 wide (VGG16's and ResNet's first convolutions): without it 128 x
  // 128, which computes as many columns again past the edge, tied with 64 x 64 and came first.
  const std::pair<int, int> tiles[] = {{128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}};
  auto legal = [&](const GpuMatMulSchedule &s) {
    return static_cast<bool>(checkGpuWgmmaSchedule(s, shape, target));
  };
  std::optional<GpuMatMulSchedule> chosen = leastEstimatedTile(
      base, tiles,
      [](GpuMatMulSchedule &s) { // one warpgroup per 64 rows, each the whole width
        s.warpM = kir::kWgmmaM;
        s.warpN = s.blockN;
      },
      legal, shape, target);
  KILN_CHECK(chosen, "no legal wgmma tile for a GEMM that runs on warpgroup products");
  GpuMatMulSchedule best = deepestStages(*chosen, shape, legal);
  best.groupM = static_cast<int>(gemmGroupM(best, shape, target));
  return best;
}

GpuMatMulSchedule defaultGpuTmaSchedule(const GemmShape &shape,
                                         const codegen::GpuTarget &target) {
  KILN_CHECK(shape.tmaOperands, "defaultGpuTmaSchedule needs operands a tensor map describes");
  GpuMatMulSchedule best = defaultGpuWgmmaSchedule(shape, target);
  best.tma = true;
  KILN_CHECK(checkGpuWgmmaSchedule(best, shape, target), "the tma default is illegal");
  return best;
}

std::vector<GpuMatMulSchedule> gpuWgmmaScheduleSpace(const GemmShape &shape,
                                                     const codegen::GpuTarget &target) {
  if (!gpuWgmmaKindFor(shape, target))
    return {};
  GpuMatMulSchedule first = defaultGpuWgmmaSchedule(shape, target);
  std::vector<GpuMatMulSchedule> space{first};
  for (int blockM : {64, 128, 256})
    for (int blockN : {64, 128, 256})
      for (int warpM : {64, 128})
        for (int warpN : {64, 128, 256})
          for (int stages : {2, 3, 4}) {
            GpuMatMulSchedule s = first;
            s.blockM = blockM;
            s.blockN = blockN;
            s.warpM = warpM;
            s.warpN = warpN;
            s.stages = stages;
            s.splitK = 1;
            if (s == first || !checkGpuWgmmaSchedule(s, shape, target))
              continue;
            space.push_back(s);
          }
  addSplitKSchedules(space, first, shape, target, [&](const GpuMatMulSchedule &s) {
    return static_cast<bool>(checkGpuMmaSchedule(s, shape, target));
  });
  addGroupedSchedule(space, shape, target);
  // Each tile shape again fed by bulk tensor copies, where the operands allow it, and each of
  // those that does not split K again on a persistent grid.
  if (shape.tmaOperands) {
    const size_t count = space.size();
    for (size_t i = 0; i < count; ++i) {
      GpuMatMulSchedule s = space[i];
      s.tma = true;
      if (checkGpuWgmmaSchedule(s, shape, target))
        space.push_back(s);
    }
    const size_t fed = space.size();
    for (size_t i = count; i < fed; ++i) {
      GpuMatMulSchedule s = space[i];
      s.persistent = true;
      if (checkGpuWgmmaSchedule(s, shape, target))
        space.push_back(s);
    }
  }
  return space;
}

} // namespace kiln::lower
