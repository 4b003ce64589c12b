// Matmul lowering against the reference interpreter on every lowering target: sizes below, at
// and above every tile, schedules that split M, N and K (the CPU's cache blocks in every
// parallel mode, the GPU's single- and double-buffered tiles), transposes, broadcast batch
// dims, every float dtype, the integer contractions and an empty reduction.
#include "lower/contraction/ContractionTargets.h"

#include "passes/lower/GemmSchedule.h"
#include "passes/lower/LowerMatMul.h"

#include <fmt/ranges.h>

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;
using Parallel = lower::MatMulSchedule::Parallel;

namespace {

/// x[m, k] @ w[k, n] (or the transposed operands) in `dtype` with `accumulate`, on every target.
void checkMatMul(int64_t m, int64_t n, int64_t k, const TargetSchedules &schedules = {},
                 DType dtype = DType::F32, DType accumulate = DType::F32, bool transposeA = false,
                 bool transposeB = false, uint64_t seed = 7) {
  INFO(fmt::format("{} x {} x {} {} accumulate {} transposes {}{}", m, n, k, dtypeName(dtype),
                   dtypeName(accumulate), transposeA, transposeB));
  GraphCase c(seed);
  buildMatMul(c, m, n, k, dtype, accumulate, transposeA, transposeB);
  checkOnTargets(c, k, accumulate, schedules);
}

/// A CPU schedule with blocks much smaller than the problem, so every loop of the nest runs
/// more than once and K is split into several blocks.
lower::MatMulSchedule tinyBlocks(Parallel parallel, DType accumulate = DType::F32) {
  lower::MatMulSchedule s;
  s.vectorWidth = lower::accumulateLanes(accumulate, hostTarget());
  s.mr = 3;
  s.nr = 2 * s.vectorWidth;
  s.mc = 2 * s.mr;
  s.nc = 2 * s.nr;
  s.kc = 5;
  s.parallel = parallel;
  return s;
}

/// Every target's default, then its small blocks or tiles.
TargetSchedules withSmallTiles(Parallel parallel = Parallel::Inner, DType accumulate = DType::F32,
                               int stages = 2) {
  return {.cpu = {std::nullopt, tinyBlocks(parallel, accumulate)},
          .sim = {std::nullopt, smallTiles(stages)}};
}

/// Through the kernel IR evaluator on the CPU, which reports every out-of-bounds access (as
/// the simulator does).
const TargetSchedules kEvaluator{.cpuRunners = {Runner::Evaluator}};

} // namespace

TEST_CASE("matmul: sizes below, at and above the tiles", "[lower][contraction][matmul]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (int64_t s : {1, 3, 5, 6, 7, 16, 17, 33, 64, 65, 100, 127, 128, 257}) {
    // Small GPU tiles on cubes up to a few tiles a side (the simulator's time grows as s^3).
    TargetSchedules cube;
    if (s <= 65)
      cube.sim.push_back(smallTiles(2));
    checkMatMul(s, s, s, cube);
    checkMatMul(s, 17, 33, {.sim = {std::nullopt, smallTiles(1)}});
    checkMatMul(33, s, 17);
    checkMatMul(17, 33, s);
  }
}

TEST_CASE("matmul: small sizes with every access checked", "[lower][contraction][matmul]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (int64_t m : {1, 5, 17})
    for (int64_t n : {1, 7, 33})
      for (int64_t k : {1, 6, 19})
        checkMatMul(m, n, k, kEvaluator);
}

TEST_CASE("matmul: blocked schedules split M, N and K", "[lower][contraction][matmul]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (Parallel parallel : {Parallel::Serial, Parallel::Outer, Parallel::Inner}) {
    lower::MatMulSchedule s = tinyBlocks(parallel);
    INFO("CPU parallel mode " << int(parallel));
    // The GPU's stages alternate with the CPU's modes: both pipelines get every size.
    TargetSchedules blocked{.cpu = {s}, .sim = {smallTiles(1 + int(parallel) % 2)}};
    TargetSchedules blockedEvaluated = blocked;
    blockedEvaluated.cpuRunners = {Runner::Evaluator};
    // Plain output (partial sums kept in the output), edges in every dimension.
    checkMatMul(23, 3 * s.nc + 5, 4 * s.kc + 2, blocked);
    checkMatMul(13, 2 * s.nr + 1, 3 * s.kc + 1, blockedEvaluated);
    // Exact multiples: no edge tiles at all.
    checkMatMul(4 * s.mc, 2 * s.nc, 3 * s.kc, blocked);
    // f16 output: partial sums in an f32 workspace, rounded once at the end.
    checkMatMul(19, s.nc + 3, 3 * s.kc + 4, blocked, DType::F16);
    checkMatMul(7, s.nr + 3, 2 * s.kc + 1, blockedEvaluated, DType::F16);
    // Unpacked A: the micro-kernel reads A itself.
    s.packA = false;
    blocked.cpu = blockedEvaluated.cpu = {s};
    checkMatMul(23, s.nc + 5, 3 * s.kc + 2, blocked);
    checkMatMul(11, s.nr + 5, 2 * s.kc + 2, blockedEvaluated);
  }
}

TEST_CASE("matmul: every combination of transposes, non-square", "[lower][contraction][matmul]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      checkMatMul(37, 29, 45,
                  {.cpu = {std::nullopt, tinyBlocks(Parallel::Inner)},
                   .sim = {smallTiles(1), smallTiles(2)},
                   .cpuRunners = {Runner::Jit, Runner::Evaluator}},
                  DType::F32, DType::F32, ta, tb, 11);
      // Vector loads on both GPU operands, whichever axis is contiguous.
      checkMatMul(64, 32, 48, {.sim = {gpuGemm(32, 32, 16, 4, 4, 2)}}, DType::F32, DType::F32,
                  ta, tb, 11);
    }
}

TEST_CASE("matmul: batched, with broadcast batch dims", "[lower][contraction][matmul]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  struct BatchCase {
    std::vector<int64_t> a, b;
    bool ta, tb;
  };
  // m = 9, k = 13, n = 21 (K and N swapped where transposed).
  std::vector<BatchCase> cases = {
      {{2, 3, 9, 13}, {3, 13, 21}, false, false},   // a carries every batch dim, b broadcasts one
      {{1, 9, 13}, {4, 13, 21}, false, false},      // a broadcast over b's batch
      {{9, 13}, {4, 13, 21}, false, false},         // a without batch dims
      {{4, 9, 13}, {13, 21}, false, false},         // b shared: folded into one GEMM of 36 rows
      {{2, 5, 9, 13}, {13, 21}, false, false},      // folded, two batch dims
      {{4, 13, 9}, {13, 21}, true, false},          // b shared but a transposed: not folded
      {{2, 1, 9, 13}, {1, 3, 21, 13}, false, true}, // both broadcast, b transposed
      {{3, 13, 9}, {3, 21, 13}, true, true},        // both transposed
      {{3, 9, 13}, {3, 13, 21}, false, false},      // plain batched
  };
  for (const BatchCase &bc : cases) {
    INFO(fmt::format("a {} b {} ta {} tb {}", fmt::join(bc.a, "x"), fmt::join(bc.b, "x"), bc.ta,
                     bc.tb));
    GraphCase c(5);
    ir::Value *a = c.input("a", DType::F32, bc.a);
    ir::Value *b = c.input("b", DType::F32, bc.b);
    c.output(c.node(OpKind::MatMul, {a, b}, matmulAttrs(bc.ta, bc.tb)));
    checkOnTargets(c, 13, DType::F32,
                   {.cpu = {std::nullopt, tinyBlocks(Parallel::Outer)},
                    .sim = {std::nullopt, smallTiles(1), smallTiles(2)},
                    .cpuRunners = {Runner::Jit, Runner::Evaluator}});
  }
}

TEST_CASE("matmul: a parameter weight is packed once, in a prelude, on the CPU",
          "[lower][contraction][matmul]") {
  struct WeightCase {
    std::vector<int64_t> a, b;
    bool ta, tb;
    bool prepacked; ///< b is one matrix for all batch elements or one each
  };
  // m = 9, k = 13, n = 21 (K and N swapped where transposed), and one GEMV row.
  std::vector<WeightCase> cases = {
      {{9, 13}, {13, 21}, false, false, true},
      {{1, 13}, {21, 13}, false, true, true}, // a dense layer's row at batch 1
      {{13, 9}, {13, 21}, true, false, true},
      {{4, 9, 13}, {13, 21}, false, false, true},          // shared: folded into one GEMM
      {{4, 13, 9}, {13, 21}, true, false, true},           // shared, not folded: matrix 0 for all
      {{3, 13, 9}, {3, 21, 13}, true, true, true},         // one weight matrix per batch element
      {{2, 1, 9, 13}, {1, 3, 21, 13}, false, true, false}, // b broadcast over part of the batch
  };
  for (const WeightCase &wc : cases) {
    INFO(fmt::format("a {} b {} ta {} tb {}", fmt::join(wc.a, "x"), fmt::join(wc.b, "x"), wc.ta,
                     wc.tb));
    GraphCase c(5);
    ir::Value *a = c.input("a", DType::F32, wc.a);
    ir::Value *b = c.param("b", DType::F32, wc.b);
    c.output(c.node(OpKind::MatMul, {a, b}, matmulAttrs(wc.ta, wc.tb)));
    for (Parallel parallel : {Parallel::Serial, Parallel::Outer, Parallel::Inner}) {
      lower::MatMulSchedule s = tinyBlocks(parallel);
      PlannedContraction planned = planContraction(c.graph());
      auto lowered = lower::lowerContractionForCpu(c.graph(), *planned.group, s, hostTarget());
      REQUIRE(lowered);
      CHECK(lowered->prelude.has_value() == wc.prepacked);
      for (Runner runner : {Runner::Jit, Runner::Evaluator})
        checkContraction(c, 13, DType::F32, runner, s);
    }
    checkContraction(c, 13, DType::F32, Runner::Jit);
  }
}

TEST_CASE("matmul: a shared b folds the batch into M", "[lower][contraction][matmul]") {
  GraphCase c;
  ir::Value *a = c.input("a", DType::F32, {4, 5, 9, 13});
  ir::Value *b = c.input("b", DType::F32, {13, 21});
  ir::Value *mm = c.node(OpKind::MatMul, {a, b}, matmulAttrs());
  lower::GemmShape shape = lower::matMulGemmShape(*mm->definingNode());
  CHECK(shape.batch == 1);
  CHECK(shape.m == 4 * 5 * 9);
  CHECK(shape.n == 21);
  CHECK(shape.k == 13);
  ir::Value *at = c.input("at", DType::F32, {4, 13, 9});
  lower::GemmShape transposed =
      lower::matMulGemmShape(*c.node(OpKind::MatMul, {at, b}, matmulAttrs(true))->definingNode());
  CHECK(transposed.batch == 4);
  CHECK(transposed.m == 9);
}

TEST_CASE("matmul: every float dtype", "[lower][contraction][matmul]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  struct DTypeCase {
    DType dtype, accumulate;
  };
  for (DTypeCase d : {DTypeCase{DType::F64, DType::F64}, DTypeCase{DType::F32, DType::F32},
                      DTypeCase{DType::F32, DType::F64}, DTypeCase{DType::F16, DType::F32},
                      DTypeCase{DType::F16, DType::F64}, DTypeCase{DType::BF16, DType::F32},
                      DTypeCase{DType::F8E4M3, DType::F32}, DTypeCase{DType::F8E5M2, DType::F32}}) {
    checkMatMul(67, 45, 131, {}, d.dtype, d.accumulate);
    checkMatMul(7, 19, 9, kEvaluator, d.dtype, d.accumulate);
    checkMatMul(29, 53, 37, withSmallTiles(Parallel::Inner, d.accumulate, 2), d.dtype,
                d.accumulate);
    // GPU only: two-element vector loads, and a transposed a through single-buffered tiles.
    checkMatMul(33, 32, 40, {.cpu = {}, .sim = {gpuGemm(32, 32, 8, 2, 2, 2, 2)}}, d.dtype,
                d.accumulate);
    checkMatMul(19, 9, 33, {.cpu = {}, .sim = {smallTiles(1)}}, d.dtype, d.accumulate, true);
  }
}

TEST_CASE("matmul: integer operands accumulate and return the accumulate dtype",
          "[lower][contraction][matmul]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  struct DTypeCase {
    DType dtype, accumulate;
  };
  // i32 and i64 inputs span their whole range, so products and sums wrap.
  for (DTypeCase d : {DTypeCase{DType::I8, DType::I32}, DTypeCase{DType::I8, DType::I64},
                      DTypeCase{DType::I32, DType::I32}, DTypeCase{DType::I32, DType::I64},
                      DTypeCase{DType::I64, DType::I64}}) {
    checkMatMul(45, 67, 77, {}, d.dtype, d.accumulate);
    checkMatMul(5, 17, 9, kEvaluator, d.dtype, d.accumulate);
    checkMatMul(31, 41, 23, withSmallTiles(Parallel::Serial, d.accumulate), d.dtype,
                d.accumulate);
    checkMatMul(17, 33, 40, {.cpu = {}, .sim = {smallTiles(2)}}, d.dtype, d.accumulate, false,
                true); // GPU only: a transposed b
  }
}

TEST_CASE("matmul: i8 x i8 -> i32 by hand", "[lower][contraction][matmul]") {
  // [[127, -128], [3, 4]] @ [[127, 1], [-128, 2]] = [[127*127 + 128*128, 127 - 256], [381 - 512, 3
  // + 8]]
  ir::Graph graph("by_hand");
  auto a = graph.addInput("a", ir::TensorType{DType::I8, {2, 2}});
  auto b = graph.addInput("b", ir::TensorType{DType::I8, {2, 2}});
  REQUIRE((a && b));
  auto mm = graph.addNode(OpKind::MatMul, {*a, *b}, matmulAttrs(false, false, DType::I32));
  REQUIRE(mm);
  REQUIRE(graph.addOutput("out", *mm));
  PlannedContraction planned = planContraction(graph);
  auto lowered = lower::lowerContractionForCpu(
      graph, *planned.group, lower::defaultContractionSchedule(graph, *planned.group, hostTarget()),
      hostTarget());
  REQUIRE(lowered);
  NamedTensors inputs;
  inputs.emplace("a",
                 HostTensor::fromDoubles(DType::I8, {2, 2}, std::vector<double>{127, -128, 3, 4}));
  inputs.emplace("b",
                 HostTensor::fromDoubles(DType::I8, {2, 2}, std::vector<double>{127, 1, -128, 2}));
  for (Runner runner : {Runner::Jit, Runner::Evaluator}) {
    auto out = runKernel(*lowered, *planned.group, inputs, runner);
    REQUIRE(out);
    CHECK(out->dtype() == DType::I32);
    CHECK(out->toDoubles() == std::vector<double>{32513, -129, -131, 11});
  }
}

TEST_CASE("matmul: an empty reduction gives zeros", "[lower][contraction][matmul]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  GraphCase c;
  ir::Value *x = c.input("x", DType::F32, {5, 0});
  ir::Value *w = c.input("w", DType::F32, {0, 7});
  ir::Value *bias = c.input("bias", DType::F32, {7});
  c.output(c.node(OpKind::Add, {c.node(OpKind::MatMul, {x, w}, matmulAttrs()), bias}));
  checkOnTargets(c, 0, DType::F32,
                 {.sim = {std::nullopt, smallTiles(2)},
                  .cpuRunners = {Runner::Jit, Runner::Evaluator}});
}
