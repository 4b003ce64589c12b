// Matmul lowering against the reference interpreter: sizes below, at and above every tile,
// blocked schedules that split M, N and K, transposes, broadcast batch dims, every float dtype
// and the integer contractions.
#include "lower/contraction/ContractionTestUtil.h"

#include "passes/lower/GemmSchedule.h"
#include "passes/lower/LowerMatMul.h"

#include <fmt/ranges.h>

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;
using Parallel = lower::MatMulSchedule::Parallel;

namespace {

/// x[m, k] @ w[k, n] in `dtype` with `accumulate`.
void checkMatMul(int64_t m, int64_t n, int64_t k, Runner runner, DType dtype = DType::F32,
                 DType accumulate = DType::F32,
                 std::optional<lower::Schedule> schedule = std::nullopt, uint64_t seed = 7) {
  INFO(fmt::format("{} x {} x {} {} accumulate {}", m, n, k, dtypeName(dtype),
                   dtypeName(accumulate)));
  GraphCase c(seed);
  ir::Value *x = c.input("x", dtype, {m, k});
  ir::Value *w = c.input("w", dtype, {k, n});
  c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs(false, false, accumulate)));
  checkContraction(c, k, accumulate, runner, schedule);
}

/// A schedule with blocks much smaller than the problem, so every loop of the nest runs more
/// than once and K is split into several blocks.
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

} // namespace

TEST_CASE("matmul: sizes below, at and above the register tile and cache blocks",
          "[lower][contraction][matmul]") {
  for (int64_t s : {1, 3, 5, 6, 7, 16, 17, 33, 64, 65, 100, 127, 128, 257}) {
    checkMatMul(s, s, s, Runner::Jit);
    checkMatMul(s, 17, 33, Runner::Jit);
    checkMatMul(33, s, 17, Runner::Jit);
    checkMatMul(17, 33, s, Runner::Jit);
  }
}

TEST_CASE("matmul: small sizes through the kernel IR evaluator (no out-of-bounds access)",
          "[lower][contraction][matmul]") {
  for (int64_t m : {1, 5, 17})
    for (int64_t n : {1, 7, 33})
      for (int64_t k : {1, 6, 19})
        checkMatMul(m, n, k, Runner::Evaluator);
}

TEST_CASE("matmul: blocked schedules split M, N and K in every parallel mode",
          "[lower][contraction][matmul]") {
  for (Parallel parallel : {Parallel::Serial, Parallel::Outer, Parallel::Inner}) {
    lower::MatMulSchedule s = tinyBlocks(parallel);
    INFO("parallel mode " << int(parallel));
    // Plain output (partial sums kept in the output), edges in every dimension.
    checkMatMul(23, 3 * s.nc + 5, 4 * s.kc + 2, Runner::Jit, DType::F32, DType::F32, s);
    checkMatMul(13, 2 * s.nr + 1, 3 * s.kc + 1, Runner::Evaluator, DType::F32, DType::F32, s);
    // Exact multiples: no edge tiles at all.
    checkMatMul(4 * s.mc, 2 * s.nc, 3 * s.kc, Runner::Jit, DType::F32, DType::F32, s);
    // f16 output: partial sums in an f32 workspace, rounded once at the end.
    checkMatMul(19, s.nc + 3, 3 * s.kc + 4, Runner::Jit, DType::F16, DType::F32, s);
    checkMatMul(7, s.nr + 3, 2 * s.kc + 1, Runner::Evaluator, DType::F16, DType::F32, s);
    // Unpacked A: the micro-kernel reads A itself.
    s.packA = false;
    checkMatMul(23, s.nc + 5, 3 * s.kc + 2, Runner::Jit, DType::F32, DType::F32, s);
    checkMatMul(11, s.nr + 5, 2 * s.kc + 2, Runner::Evaluator, DType::F32, DType::F32, s);
  }
}

TEST_CASE("matmul: every combination of transposes, non-square", "[lower][contraction][matmul]") {
  int64_t m = 37, n = 29, k = 45;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (Runner runner : {Runner::Jit, Runner::Evaluator}) {
        INFO("transpose_a " << ta << " transpose_b " << tb);
        GraphCase c(11);
        ir::Value *a =
            c.input("a", DType::F32, ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k});
        ir::Value *b =
            c.input("b", DType::F32, tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n});
        c.output(c.node(OpKind::MatMul, {a, b}, matmulAttrs(ta, tb)));
        checkContraction(c, k, DType::F32, runner);
        // The same with blocks small enough to split every dimension.
        checkContraction(c, k, DType::F32, runner, tinyBlocks(Parallel::Inner));
      }
}

TEST_CASE("matmul: batched, with broadcast batch dims", "[lower][contraction][matmul]") {
  struct BatchCase {
    std::vector<int64_t> a, b;
    bool ta, tb;
  };
  // m = 9, k = 13, n = 21 (K and N swapped where transposed).
  std::vector<BatchCase> cases = {
      {{2, 3, 9, 13}, {3, 13, 21}, false, false},   // a carries every batch dim, b broadcasts one
      {{1, 9, 13}, {4, 13, 21}, false, false},      // a broadcast over b's batch
      {{4, 9, 13}, {13, 21}, false, false},         // b shared: folded into one GEMM of 36 rows
      {{2, 5, 9, 13}, {13, 21}, false, false},      // folded, two batch dims
      {{4, 13, 9}, {13, 21}, true, false},          // b shared but a transposed: not folded
      {{2, 1, 9, 13}, {1, 3, 21, 13}, false, true}, // both broadcast, b transposed
      {{3, 9, 13}, {3, 13, 21}, false, false},      // plain batched
  };
  for (const BatchCase &bc : cases)
    for (Runner runner : {Runner::Jit, Runner::Evaluator}) {
      INFO(fmt::format("a {} b {} ta {} tb {}", fmt::join(bc.a, "x"), fmt::join(bc.b, "x"), bc.ta,
                       bc.tb));
      GraphCase c(5);
      ir::Value *a = c.input("a", DType::F32, bc.a);
      ir::Value *b = c.input("b", DType::F32, bc.b);
      ir::Value *mm = c.node(OpKind::MatMul, {a, b}, matmulAttrs(bc.ta, bc.tb));
      c.output(mm);
      checkContraction(c, 13, DType::F32, runner);
      checkContraction(c, 13, DType::F32, runner, tinyBlocks(Parallel::Outer));
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
  struct DTypeCase {
    DType dtype, accumulate;
  };
  for (DTypeCase d : {DTypeCase{DType::F64, DType::F64}, DTypeCase{DType::F32, DType::F32},
                      DTypeCase{DType::F32, DType::F64}, DTypeCase{DType::F16, DType::F32},
                      DTypeCase{DType::F16, DType::F64}, DTypeCase{DType::BF16, DType::F32},
                      DTypeCase{DType::F8E4M3, DType::F32}, DTypeCase{DType::F8E5M2, DType::F32}}) {
    checkMatMul(67, 45, 131, Runner::Jit, d.dtype, d.accumulate);
    checkMatMul(7, 19, 9, Runner::Evaluator, d.dtype, d.accumulate);
    checkMatMul(29, 53, 37, Runner::Jit, d.dtype, d.accumulate,
                tinyBlocks(Parallel::Inner, d.accumulate));
  }
}

TEST_CASE("matmul: integer operands accumulate and return the accumulate dtype",
          "[lower][contraction][matmul]") {
  struct DTypeCase {
    DType dtype, accumulate;
  };
  // i32 and i64 inputs span their whole range, so products and sums wrap.
  for (DTypeCase d : {DTypeCase{DType::I8, DType::I32}, DTypeCase{DType::I8, DType::I64},
                      DTypeCase{DType::I32, DType::I32}, DTypeCase{DType::I32, DType::I64},
                      DTypeCase{DType::I64, DType::I64}}) {
    checkMatMul(45, 67, 77, Runner::Jit, d.dtype, d.accumulate);
    checkMatMul(5, 17, 9, Runner::Evaluator, d.dtype, d.accumulate);
    checkMatMul(31, 41, 23, Runner::Jit, d.dtype, d.accumulate,
                tinyBlocks(Parallel::Serial, d.accumulate));
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
  GraphCase c;
  ir::Value *x = c.input("x", DType::F32, {5, 0});
  ir::Value *w = c.input("w", DType::F32, {0, 7});
  ir::Value *bias = c.input("bias", DType::F32, {7});
  c.output(c.node(OpKind::Add, {c.node(OpKind::MatMul, {x, w}, matmulAttrs()), bias}));
  for (Runner runner : {Runner::Jit, Runner::Evaluator})
    checkContraction(c, 0, DType::F32, runner);
}
