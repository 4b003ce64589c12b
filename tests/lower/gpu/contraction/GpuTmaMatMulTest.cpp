// The warpgroup GEMM template fed by bulk tensor copies (tma: one producer warpgroup, the
// consumer warpgroups handing stages back through mbarriers) on the SIMT simulator against the
// reference interpreter: which GEMMs can take it, sizes below, at and above the tiles (boxes
// over the tensor's edges read zeros), both orientations of each operand, pipeline depths,
// split-K and batches. The simulator runs producer and consumers as fibers that switch at
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
  // file: ptxas must keep the consumers' 128 accumulators in registers.
  GraphCase c(3);
  ir::Value *x = c.input("x", DType::BF16, {130, 336});
  ir::Value *w = c.input("w", DType::BF16, {336, 264});
  c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs(false, false)));
  PlannedContraction planned = planContraction(c.graph());
  lower::GpuMatMulSchedule big =
      lower::defaultGpuTmaSchedule(shapeOf(8192, 8192, 8192), gpuTestTarget());
  CHECK(big.tma);
  auto lowered = lower::lowerGroupForGpu(c.graph(), *planned.group, big, gpuTestTarget());
  REQUIRE(lowered);
  std::vector<AssembledKernel> assembled =
      checkGpuKernelsAssemble({lowered->kernel}, gpuTestTarget(), "the tma default");
  for (const AssembledKernel &kernel : assembled) {
    INFO(kernel.backend);
    CHECK(kernel.resources.spillStoreBytes == 0);
    WARN(lower::scheduleStr(lower::Schedule{big}) << " (" << kernel.backend << "): "
                                                  << kernel.resources.registers << " registers");
  }
}
