// The warpgroup GEMM template fed by bulk tensor copies (tma: one producer warpgroup, the
// consumer warpgroups handing stages back through mbarriers) on the SIMT simulator against the
// reference interpreter: which GEMMs can take it, sizes below, at and above the tiles (boxes
// over the tensor's edges read zeros), both orientations of each operand, pipeline depths,
// split-K, batches, and persistent grids whose blocks walk several tiles. The simulator runs producer and consumers as fibers that switch at
// mbarrier waits and wakes a waiter the moment its phase completes, so a stage handed back
// too early, a missing byte count or a wrong phase fails here.
#include "lower/gpu/contraction/GpuContractionTestUtil.h"

#include "passes/lower/gpu/GpuWgmmaSchedule.h"

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;

namespace {

lower::GpuMatMulSchedule tmaTiles(int blockM, int blockN, int warpM, int warpN, int stages,
                                  int splitK = 1) {
  lower::GpuMatMulSchedule s = mmaTiles(blockM, blockN, 64, warpM, warpN, stages);
  s.wgmma = true;
  s.tma = true;
  s.splitK = splitK;
  return s;
}

/// x[m, k] @ w[k, n] (or transposed operands) in bf16 with bulk tensor copies.
void checkTmaMatMul(int64_t m, int64_t n, int64_t k, const lower::GpuMatMulSchedule &s,
                    bool transposeA = false, bool transposeB = false) {
  INFO(fmt::format("{} x {} x {} transposes {}{} {}", m, n, k, transposeA, transposeB,
                   lower::scheduleStr(lower::Schedule{s})));
  GraphCase c(13);
  ir::Value *x = c.input("x", DType::BF16, transposeA ? std::vector<int64_t>{k, m}
                                                      : std::vector<int64_t>{m, k});
  ir::Value *w = c.input("w", DType::BF16, transposeB ? std::vector<int64_t>{n, k}
                                                      : std::vector<int64_t>{k, n});
  c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs(transposeA, transposeB)));
  checkGpuContraction(c, k, DType::F32, lower::Schedule{s});
}

lower::GpuMatMulSchedule persistentTiles(int blockM, int blockN, int warpM, int warpN,
                                         int stages) {
  lower::GpuMatMulSchedule s = tmaTiles(blockM, blockN, warpM, warpN, stages);
  s.persistent = true;
  return s;
}

/// A persistent GEMM lowered for `target` (few SMs, so each block walks several tiles), run on
/// the simulator against the reference, and assembled by ptxas through both backends.
void checkPersistentOn(const codegen::GpuTarget &target, GraphCase &c, int64_t k,
                       const lower::GpuMatMulSchedule &s, int64_t wantBlocks) {
  INFO(fmt::format("{} on {} SMs", lower::scheduleStr(lower::Schedule{s}), target.numSms));
  PlannedContraction planned = planContraction(c.graph());
  auto lowered = lower::lowerGroup(c.graph(), *planned.group, s, target);
  INFO((lowered ? std::string() : lowered.error().str()));
  REQUIRE(lowered);
  auto launch = kir::gpuLaunchOf(lowered->kernel, target.maxThreadsPerBlock);
  REQUIRE(launch);
  CHECK(launch->numBlocks() == wantBlocks);
  auto got = simulateContraction(*lowered, *planned.group, c.inputs());
  INFO((got ? std::string() : got.error().str()));
  REQUIRE(got);
  auto want = ir::interpret(c.graph(), c.inputs());
  REQUIRE(want);
  checkClose(*got, want->at("out"), k, DType::F32);
  checkGpuKernelsAssemble({lowered->kernel}, target, "a persistent tma GEMM");
}

lower::GemmShape shapeOf(int64_t m, int64_t n, int64_t k) {
  GraphCase c;
  ir::Value *x = c.input("x", DType::BF16, {m, k});
  ir::Value *w = c.input("w", DType::BF16, {k, n});
  c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs()));
  return lower::gpuContractionGemmShape(*planContraction(c.graph()).group);
}

} // namespace

TEST_CASE("gpu tma: which GEMMs take bulk tensor copies", "[lower][gpu-contraction][tma]") {
  const codegen::GpuTarget &h100 = gpuTestTarget();
  // Rows of 80 and 72 bf16 are 16-byte multiples; a row of 70 (140 bytes) is not.
  CHECK(shapeOf(64, 72, 80).tmaOperands);
  CHECK_FALSE(shapeOf(64, 72, 70).tmaOperands);
  lower::GpuMatMulSchedule s = tmaTiles(64, 64, 64, 64, 2);
  CHECK(lower::checkGpuWgmmaSchedule(s, shapeOf(64, 72, 80), h100));
  auto refused = lower::checkGpuWgmmaSchedule(s, shapeOf(64, 72, 70), h100);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().str(), Catch::Matchers::Contains("bulk tensor copies"));
  // The schedule text round-trips, and the space offers tma variants.
  auto parsed = lower::parseSchedule(lower::scheduleStr(lower::Schedule{s}));
  REQUIRE(parsed);
  CHECK(std::get<lower::GpuMatMulSchedule>(*parsed) == s);
  auto space = lower::gpuWgmmaScheduleSpace(shapeOf(512, 768, 768), h100);
  CHECK(std::ranges::any_of(space, [](const auto &x) { return x.tma; }));
  CHECK_FALSE(lower::defaultGpuWgmmaSchedule(shapeOf(512, 768, 768), h100).tma);
}

TEST_CASE("gpu tma: sizes, orientations and pipeline depths", "[lower][gpu-contraction][tma]") {
  for (int64_t m : {1, 64, 100})
    checkTmaMatMul(m, 72, 80, tmaTiles(64, 64, 64, 64, 2));
  checkTmaMatMul(64, 64, 64, tmaTiles(64, 64, 64, 64, 2)); // one tile, one K step
  for (int stages : {2, 3, 4})
    checkTmaMatMul(65, 72, 328, tmaTiles(64, 64, 64, 64, stages)); // 6 K tiles
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      checkTmaMatMul(72, 136, 96, tmaTiles(64, 128, 64, 128, 3), ta, tb); // 16-byte rows
  // Two consumer warpgroups, each arriving on the empty barriers.
  checkTmaMatMul(130, 136, 200, tmaTiles(128, 128, 64, 128, 3));
  checkTmaMatMul(130, 264, 136, tmaTiles(128, 256, 64, 256, 2));
}

TEST_CASE("gpu tma: split-K and batches", "[lower][gpu-contraction][tma]") {
  checkTmaMatMul(40, 72, 720, tmaTiles(64, 64, 64, 64, 3, 4)); // a short last split
  GraphCase c(7);
  ir::Value *a = c.input("a", DType::BF16, {3, 40, 64});
  ir::Value *b = c.input("b", DType::BF16, {3, 64, 24});
  c.output(c.node(OpKind::MatMul, {a, b}, matmulAttrs()));
  checkGpuContraction(c, 64, DType::F32, lower::Schedule{tmaTiles(64, 64, 64, 64, 2)});
  GraphCase broadcast(8);
  ir::Value *x = broadcast.input("x", DType::BF16, {3, 40, 64});
  ir::Value *w = broadcast.input("w", DType::BF16, {64, 24}); // one B for every batch
  broadcast.output(broadcast.node(OpKind::MatMul, {x, w}, matmulAttrs()));
  checkGpuContraction(broadcast, 64, DType::F32, lower::Schedule{tmaTiles(64, 64, 64, 64, 2)});
}

TEST_CASE("gpu tma: the large-GEMM default assembles without spills",
          "[lower][gpu-contraction][tma]") {
  // A block of the producer and two consumer warpgroups (384 threads) shares the register
  // file: ptxas must keep the consumers' 128 accumulators in registers, on a persistent grid
  // too.
  lower::GpuMatMulSchedule big =
      lower::defaultGpuTmaSchedule(shapeOf(8192, 8192, 8192), gpuTestTarget());
  CHECK(big.tma);
  lower::GpuMatMulSchedule persistent = big;
  persistent.persistent = true;
  for (const lower::GpuMatMulSchedule &s : {big, persistent})
    for (const AssembledKernel &kernel :
         assembleMatMulWithoutSpills(130, 336, 264, s, "the tma default"))
      WARN(lower::scheduleStr(lower::Schedule{s}) << " (" << kernel.backend << "): "
                                                  << kernel.resources.registers << " registers");
}

TEST_CASE("gpu tma: persistent grids walk several tiles per block",
          "[lower][gpu-contraction][tma]") {
  // One SM holding four blocks of 64 x 64 tiles (3 stages, 50 KiB each): 4 blocks walk 15
  // tiles (4, 4, 4, 3), 5 K tiles each, so stages and phases carry across tiles mid-round.
  codegen::GpuTarget oneSm = gpuTestTarget();
  oneSm.numSms = 1;
  lower::GpuMatMulSchedule s = persistentTiles(64, 64, 64, 64, 3);
  CHECK(lower::persistentGridBlocks(s, DType::BF16, 15, oneSm) == 4);
  CHECK(lower::persistentGridBlocks(s, DType::BF16, 3, oneSm) == 3); // never more than tiles
  for (bool tb : {false, true}) {
    GraphCase c(21);
    ir::Value *x = c.input("x", DType::BF16, {130, 320});
    ir::Value *w = c.input("w", DType::BF16, tb ? std::vector<int64_t>{264, 320}
                                                : std::vector<int64_t>{320, 264});
    c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs(false, tb)));
    checkPersistentOn(oneSm, c, 320, s, 4);
  }
  // Two consumer warpgroups, the grouped tile order, one K tile per output tile.
  {
    lower::GpuMatMulSchedule grouped = persistentTiles(128, 64, 64, 64, 2);
    grouped.groupM = 2;
    GraphCase c(22);
    ir::Value *x = c.input("x", DType::BF16, {300, 64});
    ir::Value *w = c.input("w", DType::BF16, {64, 136});
    c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs()));
    checkPersistentOn(oneSm, c, 64, grouped,
                      lower::persistentGridBlocks(grouped, DType::BF16, 9, oneSm));
  }
  // The GPU test's tiles: two consumer warpgroups of 64 x 128, one block an SM (the register
  // file), so here one block walks all 9 tiles.
  {
    lower::GpuMatMulSchedule wide = persistentTiles(128, 128, 64, 128, 3);
    CHECK(lower::persistentGridBlocks(wide, DType::BF16, 9, oneSm) == 1);
    GraphCase c(24);
    ir::Value *x = c.input("x", DType::BF16, {260, 200});
    ir::Value *w = c.input("w", DType::BF16, {200, 264});
    c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs()));
    checkPersistentOn(oneSm, c, 200, wide, 1);
  }
  // Batches: each tile's batch comes from its linear index (B moving with it, and broadcast).
  for (bool broadcastB : {false, true}) {
    GraphCase c(23);
    ir::Value *x = c.input("x", DType::BF16, {3, 70, 128});
    ir::Value *w = c.input("w", DType::BF16, broadcastB ? std::vector<int64_t>{128, 72}
                                                        : std::vector<int64_t>{3, 128, 72});
    c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs()));
    checkPersistentOn(oneSm, c, 128, s, 4); // 3 batches x 2 x 2 tiles
  }
  // On the full H100 the grid is one tile per block here: the same code, each loop once.
  checkTmaMatMul(130, 136, 200, persistentTiles(64, 64, 64, 64, 3));
  checkTmaMatMul(64, 64, 64, persistentTiles(64, 64, 64, 64, 2));
}

TEST_CASE("gpu tma: persistent schedules: legality and text", "[lower][gpu-contraction][tma]") {
  const codegen::GpuTarget &h100 = gpuTestTarget();
  lower::GemmShape shape = shapeOf(512, 768, 768);
  lower::GpuMatMulSchedule s = persistentTiles(128, 128, 64, 128, 3);
  CHECK(lower::checkGpuMmaSchedule(s, shape, h100));
  auto parsed = lower::parseSchedule(lower::scheduleStr(lower::Schedule{s}));
  REQUIRE(parsed);
  CHECK(lower::scheduleStr(*parsed) ==
        "gpu.matmul wgmma bm=128 bn=128 bk=64 wm=64 wn=128 stages=3 vw=8 splitk=1 tma persistent");
  CHECK(std::get<lower::GpuMatMulSchedule>(*parsed) == s);
  auto why = [&](lower::GpuMatMulSchedule bad) {
    auto checked = lower::checkGpuMmaSchedule(bad, shape, h100);
    REQUIRE_FALSE(checked);
    return checked.error().message();
  };
  lower::GpuMatMulSchedule noTma = s;
  noTma.tma = false;
  CHECK_THAT(why(noTma), Catch::Matchers::Contains("needs tma"));
  lower::GpuMatMulSchedule split = s;
  split.splitK = 2;
  CHECK_THAT(why(split), Catch::Matchers::Contains("does not split K"));
  lower::GpuMatMulSchedule mmaSync = mmaTiles(64, 64, 32, 32, 32, 2);
  mmaSync.tma = true;
  CHECK_THAT(why(mmaSync), Catch::Matchers::Contains("wgmma"));
  auto noTmaText = lower::parseSchedule(
      "gpu.matmul wgmma bm=64 bn=64 bk=64 wm=64 wn=64 stages=2 vw=8 splitk=1 persistent");
  REQUIRE_FALSE(noTmaText);
  CHECK_THAT(noTmaText.error().str(), Catch::Matchers::Contains("'persistent' follows 'tma'"));
  // The space offers a persistent twin of every unsplit tma schedule.
  auto space = lower::gpuWgmmaScheduleSpace(shape, h100);
  size_t tma = 0, persistent = 0;
  for (const auto &x : space) {
    tma += x.tma && !x.persistent && x.splitK == 1;
    persistent += x.persistent;
  }
  CHECK(persistent > 0);
  CHECK(persistent == tma);
}
