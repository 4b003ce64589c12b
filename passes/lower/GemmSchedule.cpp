// GEMM schedule legality, the heuristic default and the tuning space (see GemmSchedule.h).
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/LowerUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace kiln::lower {
namespace {

using Parallel = MatMulSchedule::Parallel;

int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }
int64_t roundDown(int64_t a, int64_t b) { return a / b * b; }

/// Below this many multiply-adds a fork-join costs more than the threads save.
constexpr double kMinParallelWork = 1 << 17;
/// The largest register tile the lowering unrolls (vectors).
constexpr int64_t kMaxTileVectors = 64;

bool isPowerOfTwo(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

Expected<void> scheduleError(std::string message) {
  return makeError(ErrorCode::InvalidArgument, "matmul schedule: " + std::move(message));
}

/// A register tile and its score for one problem.
struct RegisterTile {
  int64_t mr, vectors;
  double score;
};

/// Register tiles that fit the register file: mr*nv accumulators, nv B vectors, one
/// broadcast A value and, for integers (no fused multiply-add), one product temporary.
/// `aLoadCost` weighs a broadcast of A against a vector load of packed B.
std::vector<RegisterTile> rankRegisterTiles(const GemmShape &shape, int vw, int registers,
                                            double aLoadCost = 1.0) {
  bool isFloat = isFloatingPoint(shape.accumulate);
  std::vector<RegisterTile> tiles;
  for (int64_t nv = 1; nv <= 4; ++nv)
    for (int64_t mr = 1; mr <= 16; ++mr) {
      if (mr * nv + nv + 1 + (isFloat ? 0 : 1) > registers)
        continue;
      int64_t nr = nv * vw;
      double m = std::max<int64_t>(shape.m, 1), n = std::max<int64_t>(shape.n, 1);
      // The fraction of the padded tiles' arithmetic that lands in the output.
      double useful = m * n / (double(roundUp(int64_t(m), mr)) * double(roundUp(int64_t(n), nr)));
      // Multiply-adds per load (mr broadcasts + nv vector loads per k step), saturating once
      // the loads stop being the bottleneck; and enough independent accumulators to cover
      // the latency of two fused multiply-add pipes.
      double loads = aLoadCost * double(mr) + double(nv);
      double intensity = std::min(double(mr * nv) / loads, 2.4) / 2.4;
      double latency = std::min(double(mr * nv) / 8.0, 1.0);
      tiles.push_back({mr, nv, useful * intensity * latency});
    }
  // Ties go to the larger tile, then to the wider one (fewer strips, longer vector runs).
  std::stable_sort(tiles.begin(), tiles.end(), [](const RegisterTile &a, const RegisterTile &b) {
    if (a.score != b.score)
      return a.score > b.score;
    if (a.mr * a.vectors != b.mr * b.vectors)
      return a.mr * a.vectors > b.mr * b.vectors;
    return a.vectors > b.vectors;
  });
  return tiles;
}

/// kc: long K blocks, because every block boundary costs a pass over the output tile
/// (partial sums out and back in); a kc x nr strip of packed B is streamed from L2 (a quarter
/// of it), which the hardware prefetcher keeps up with (measured on Zen 4, 1024^3: kc = 256
/// ran at 78% of the speed of kc = 1024). Split evenly over K so no block is a sliver, a multiple
/// of 8 where K allows (whole cache lines of packed rows).
int64_t chooseKc(const GemmShape &shape, int64_t nr, int64_t bytes,
                 const codegen::CpuTarget &target) {
  int64_t kcTarget = std::clamp<int64_t>(target.l2Bytes / 4 / (nr * bytes), 64, 1024);
  if (shape.k <= 0)
    return 1;
  int64_t blocks = ceilDiv(shape.k, kcTarget);
  int64_t kc = ceilDiv(shape.k, blocks);
  return blocks == 1 ? kc : roundUp(kc, 8);
}

/// Tasks a parallel loop over the problem should offer: every core, unless the work per task
/// would be too small to pay for the dispatch.
int64_t wantedTasks(const GemmShape &shape, int cores) {
  double perTask = kMinParallelWork / 4;
  return std::clamp<int64_t>(int64_t(shape.work() / perTask), 1, cores);
}

/// The fraction of `cores` x rounds that `tasks` equal tasks keep busy.
double balance(int64_t tasks, int cores) {
  return double(tasks) / double(ceilDiv(tasks, cores) * cores);
}

/// Parallel::Outer: nc (at most `ncCap`) so that batch x column panels keep the cores evenly
/// busy, with the fewest panels that do (each panel packs the A blocks again).
int64_t balanceOuterPanels(const GemmShape &shape, int64_t nr, int64_t ncCap, int cores) {
  int64_t strips = ceilDiv(std::max<int64_t>(shape.n, 1), nr);
  int64_t maxStrips = std::max<int64_t>(1, ncCap / nr);
  int64_t best = std::min(strips, maxStrips) * nr;
  double bestBalance = balance(shape.batch * ceilDiv(strips, best / nr), cores);
  for (int64_t panels = ceilDiv(strips, maxStrips); panels <= strips && bestBalance < 0.95;
       ++panels) {
    int64_t perPanel = ceilDiv(strips, panels);
    double b = balance(shape.batch * ceilDiv(strips, perPanel), cores);
    if (b > bestBalance + 1e-9) {
      bestBalance = b;
      best = perPanel * nr;
    }
  }
  return best;
}

MatMulSchedule withTile(const GemmShape &shape, const codegen::CpuTarget &target, int64_t mr,
                        int64_t vectors, Parallel parallel) {
  MatMulSchedule s;
  int vw = accumulateLanes(shape.accumulate, target);
  int64_t bytes = dtypeByteSize(shape.accumulate);
  s.vectorWidth = vw;
  s.mr = mr;
  s.nr = vectors * vw;
  s.kc = chooseKc(shape, s.nr, bytes, target);
  s.packA = true;
  s.packB = true;
  s.parallel = parallel;
  int64_t mPadded = roundUp(std::max<int64_t>(shape.m, 1), s.mr);
  int64_t nPadded = roundUp(std::max<int64_t>(shape.n, 1), s.nr);
  // The packed A block stays in L2 next to the B strip streaming through.
  int64_t mcCap = target.l2Bytes / 2 / (s.kc * bytes);
  s.mc = std::clamp(roundDown(mcCap, s.mr), s.mr, mPadded);
  // The B panel stays in L3: one shared panel, or with per-task packing one per core. Half
  // the task-buffer bound at most: a server's L3 (hundreds of MiB, shared with other tenants)
  // says nothing about the panel size worth packing, and the panel must stay legal.
  int64_t l3Share =
      parallel == Parallel::Outer ? target.l3Bytes / std::max(1, target.cores) : target.l3Bytes;
  int64_t panelBytes = std::min(l3Share / 2, kMaxTaskBufferBytes / 2);
  int64_t ncCap = panelBytes / (s.kc * bytes);
  s.nc = std::clamp(roundDown(ncCap, s.nr), s.nr, nPadded);
  if (parallel == Parallel::Outer)
    s.nc = balanceOuterPanels(shape, s.nr, s.nc, target.cores);
  if (parallel == Parallel::Inner) {
    // Enough row blocks x column chunks for every core.
    int64_t strips = s.nc / s.nr;
    int64_t tasks = wantedTasks(shape, target.cores);
    int64_t rowBlocks = ceilDiv(tasks, strips);
    if (ceilDiv(shape.m, s.mc) < rowBlocks)
      s.mc = std::max(s.mr, roundUp(ceilDiv(shape.m, rowBlocks), s.mr));
  }
  return s;
}

Parallel chooseParallel(const GemmShape &shape, const codegen::CpuTarget &target,
                        const MatMulSchedule &outer) {
  if (target.cores <= 1 || shape.work() < kMinParallelWork)
    return Parallel::Serial;
  int64_t n = std::max<int64_t>(shape.n, 1);
  int64_t outerTasks = shape.batch * ceilDiv(n, outer.nc);
  // Per-task packing wins when it gives every core at least one task of its own and the
  // tasks divide evenly enough (at most a quarter of the cores' time idle): one fork-join in
  // all. Counted in columns, since the last panel of a row is ragged: VGG16's 14x14 layer
  // (196 columns) in panels of 144 and 52 kept one of two cores idle 46% of the time, and
  // splitting the rows instead ran 1.5x faster.
  double rounds = double(ceilDiv(outerTasks, target.cores));
  double columnBalance = double(shape.batch * n) /
                         (rounds * target.cores * double(std::min(outer.nc, roundUp(n, outer.nr))));
  if (outerTasks >= target.cores && columnBalance >= 0.75)
    return Parallel::Outer;
  return Parallel::Inner;
}

/// Direct's reductions shorter than this get a register tile with registers to spare.
constexpr int64_t kShortInPlaceReduction = 512;

/// The default register tile. Over an A read in place (Direct) with a short reduction it
/// leaves three vector registers free, where AVX2's 16-register 4x24 tile spilled accumulators
/// at every segment's back edge, a cost a short K does not amortize, and it counts each row's
/// broadcast as two loads (a stream of its own from the input, not a packed block), which
/// favours wide tiles of few rows (measured per layer in docs/lowering.md, "Register tiles for
/// Direct").
RegisterTile defaultRegisterTile(const GemmShape &shape, const codegen::CpuTarget &target) {
  int vw = accumulateLanes(shape.accumulate, target);
  int registers = vectorRegisters(target);
  if (shape.aInPlace && shape.k < kShortInPlaceReduction)
    return rankRegisterTiles(shape, vw, registers - 3, 2.0).front();
  return rankRegisterTiles(shape, vw, registers).front();
}

} // namespace

int vectorRegisters(const codegen::CpuTarget &target) { return target.vectorBits >= 512 ? 32 : 16; }

int accumulateLanes(DType accumulate, const codegen::CpuTarget &target) {
  return std::max(1, target.vectorBits / (8 * dtypeByteSize(accumulate)));
}

MatMulSchedule clampGemmSchedule(const MatMulSchedule &schedule, const GemmShape &shape) {
  MatMulSchedule s = schedule;
  if (s.mr >= 1 && s.mc >= s.mr)
    s.mc = std::min(s.mc, roundUp(std::max<int64_t>(shape.m, 1), s.mr));
  if (s.nr >= 1 && s.nc >= s.nr)
    s.nc = std::min(s.nc, roundUp(std::max<int64_t>(shape.n, 1), s.nr));
  if (s.kc >= 1)
    s.kc = std::min(s.kc, std::max<int64_t>(shape.k, 1));
  return s;
}

Expected<void> checkGemmSchedule(const MatMulSchedule &schedule, const GemmShape &shape) {
  const MatMulSchedule &s = schedule;
  if (!isPowerOfTwo(s.vectorWidth) || s.vectorWidth > 64)
    return scheduleError(
        fmt::format("vectorWidth = {} must be a power of two up to 64", s.vectorWidth));
  if (s.nr < s.vectorWidth || s.nr % s.vectorWidth != 0)
    return scheduleError(fmt::format("nr = {} must be a positive multiple of vectorWidth = {}",
                                     s.nr, s.vectorWidth));
  if (s.mr < 1)
    return scheduleError(fmt::format("mr = {} must be at least 1", s.mr));
  if (s.mr * (s.nr / s.vectorWidth) > kMaxTileVectors)
    return scheduleError(fmt::format("the {}x{} register tile needs {} vectors, at most {}", s.mr,
                                     s.nr, s.mr * (s.nr / s.vectorWidth), kMaxTileVectors));
  if (s.mc < s.mr || s.mc % s.mr != 0)
    return scheduleError(fmt::format("mc = {} must be a positive multiple of mr = {}", s.mc, s.mr));
  if (s.nc < s.nr || s.nc % s.nr != 0)
    return scheduleError(fmt::format("nc = {} must be a positive multiple of nr = {}", s.nc, s.nr));
  if (s.kc < 1)
    return scheduleError(fmt::format("kc = {} must be at least 1", s.kc));
  if (!s.packB)
    return scheduleError("packB = false is not supported: the micro-kernel reads B vectors from "
                         "a packed panel");
  MatMulSchedule c = clampGemmSchedule(s, shape);
  int64_t bytes = dtypeByteSize(shape.accumulate);
  if (c.packA && c.mc * c.kc * bytes > kMaxTaskBufferBytes)
    return scheduleError(fmt::format("the packed A block mc x kc = {} x {} takes {} bytes per "
                                     "task, at most {}",
                                     c.mc, c.kc, c.mc * c.kc * bytes, kMaxTaskBufferBytes));
  if (c.parallel == Parallel::Outer && c.nc * c.kc * bytes > kMaxTaskBufferBytes)
    return scheduleError(fmt::format("parallel = outer packs a kc x nc = {} x {} B panel per task: "
                                     "{} bytes, at most {}",
                                     c.kc, c.nc, c.kc * c.nc * bytes, kMaxTaskBufferBytes));
  return {};
}

int64_t innerColumnChunks(int64_t numRowBlocks, int64_t stripsPerPanel, int cores) {
  if (cores <= 1 || stripsPerPanel <= 1)
    return 1;
  // Time in units of the whole job: rounds of equal tasks, plus the A block each extra chunk
  // packs again (about 1% of a task's work).
  int64_t best = 1;
  double bestTime = 1e300;
  for (int64_t chunks = 1; chunks <= stripsPerPanel; ++chunks) {
    int64_t tasks = numRowBlocks * chunks;
    double time = double(ceilDiv(tasks, cores)) / double(tasks) + 0.01 * double(chunks) / cores;
    if (time < bestTime - 1e-12) {
      bestTime = time;
      best = chunks;
    }
  }
  return best;
}

MatMulSchedule defaultGemmSchedule(const GemmShape &shape, const codegen::CpuTarget &target) {
  RegisterTile tile = defaultRegisterTile(shape, target);
  MatMulSchedule outer = withTile(shape, target, tile.mr, tile.vectors, Parallel::Outer);
  Parallel parallel = chooseParallel(shape, target, outer);
  if (parallel == Parallel::Outer)
    return outer;
  return withTile(shape, target, tile.mr, tile.vectors, parallel);
}

std::vector<MatMulSchedule>
gemmScheduleSpace(const GemmShape &shape, const codegen::CpuTarget &target, bool allowUnpackedA) {
  std::vector<MatMulSchedule> space;
  auto addIfNew = [&](MatMulSchedule s) {
    if (!checkGemmSchedule(s, shape))
      return;
    s = clampGemmSchedule(s, shape);
    for (const MatMulSchedule &existing : space)
      if (existing == s)
        return;
    space.push_back(s);
  };
  MatMulSchedule base = clampGemmSchedule(defaultGemmSchedule(shape, target), shape);
  addIfNew(base);
  // Register tiles: the best few for this shape, each with every parallel mode.
  int vw = accumulateLanes(shape.accumulate, target);
  std::vector<RegisterTile> tiles = rankRegisterTiles(shape, vw, vectorRegisters(target));
  for (size_t t = 0; t < std::min<size_t>(tiles.size(), 4); ++t)
    for (Parallel parallel : {Parallel::Inner, Parallel::Outer, Parallel::Serial})
      addIfNew(withTile(shape, target, tiles[t].mr, tiles[t].vectors, parallel));
  // Cache blocks around the default.
  for (int64_t factor : {2, 4}) {
    MatMulSchedule s = base;
    s.kc = std::max<int64_t>(1, base.kc / factor);
    addIfNew(s);
    s = base;
    s.kc = base.kc * factor;
    addIfNew(s);
    s = base;
    s.mc = std::max(base.mr, roundDown(base.mc / factor, base.mr));
    addIfNew(s);
    s = base;
    s.nc = std::max(base.nr, roundDown(base.nc / factor, base.nr));
    addIfNew(s);
  }
  if (allowUnpackedA) {
    MatMulSchedule s = base;
    s.packA = false;
    addIfNew(s);
  }
  return space;
}

} // namespace kiln::lower
