// GPU matmul lowering on the SIMT simulator against the reference interpreter: sizes below,
// at and above the block tiles, schedules with tiles larger and smaller than the problem,
// transposes, broadcast batches, every float dtype, integer contractions, fused epilogues.
#include "lower/gpu/contraction/GpuContractionTestUtil.h"

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;

namespace {

/// x[m, k] @ w[k, n] (or the transposed operands) in `dtype` with `accumulate`.
void checkGpuMatMul(int64_t m, int64_t n, int64_t k, std::optional<lower::Schedule> schedule,
                    DType dtype = DType::F32, DType accumulate = DType::F32,
                    bool transposeA = false, bool transposeB = false, uint64_t seed = 11) {
  INFO(fmt::format("{} x {} x {} {} accumulate {} transposes {}{}", m, n, k, dtypeName(dtype),
                   dtypeName(accumulate), transposeA, transposeB));
  GraphCase c(seed);
  ir::Value *x = c.input("x", dtype, transposeA ? std::vector<int64_t>{k, m}
                                                : std::vector<int64_t>{m, k});
  ir::Value *w = c.input("w", dtype, transposeB ? std::vector<int64_t>{n, k}
                                                : std::vector<int64_t>{k, n});
  c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs(transposeA, transposeB, accumulate)));
  checkGpuContraction(c, k, accumulate, schedule);
}

/// Small tiles: every grid axis and the K loop run several times at the test sizes.
lower::GpuMatMulSchedule smallTiles(int stages) { return gpuGemm(32, 32, 8, 2, 2, stages); }

} // namespace

TEST_CASE("gpu matmul: sizes below, at and above the tiles", "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (int64_t s : {1, 3, 7, 16, 17, 33, 64, 65}) {
    checkGpuMatMul(s, 17, 33, std::nullopt);
    checkGpuMatMul(33, s, 7, std::nullopt);
    checkGpuMatMul(16, 65, s, std::nullopt);
    checkGpuMatMul(s, s, s, smallTiles(2));
    checkGpuMatMul(s, 33, 17, smallTiles(1));
  }
}

TEST_CASE("gpu matmul: tiles larger and smaller than the problem", "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (const lower::GpuMatMulSchedule &s :
       {gpuGemm(128, 128, 32, 8, 8, 1), gpuGemm(128, 64, 16, 8, 4, 2),
        gpuGemm(32, 128, 8, 4, 8, 2), gpuGemm(64, 32, 32, 4, 2, 2), gpuGemm(32, 32, 8, 8, 8, 1)}) {
    checkGpuMatMul(7, 9, 5, s);
    checkGpuMatMul(65, 33, 47, s);
    checkGpuMatMul(64, 64, 16, s); // exact multiples of some tiles: the unguarded paths
  }
}

TEST_CASE("gpu matmul: K of zero gives zeros", "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  checkGpuMatMul(5, 7, 0, std::nullopt);
  checkGpuMatMul(5, 7, 0, smallTiles(2));
}

TEST_CASE("gpu matmul: transposed operands", "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int stages : {1, 2}) {
        checkGpuMatMul(33, 17, 45, smallTiles(stages), DType::F32, DType::F32, ta, tb);
        checkGpuMatMul(64, 32, 48, gpuGemm(32, 32, 16, 4, 4, stages), DType::F32, DType::F32,
                       ta, tb); // vector loads on both operands, whichever axis is contiguous
      }
}

TEST_CASE("gpu matmul: batched with broadcast batch dims", "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  struct BatchCase {
    std::vector<int64_t> a, b;
    bool transposeA, transposeB;
  };
  for (const BatchCase &bc : {BatchCase{{2, 3, 17, 9}, {3, 9, 13}, false, false},
                              BatchCase{{5, 17, 9}, {9, 13}, false, false}, // batch folded into M
                              BatchCase{{2, 1, 7, 12}, {1, 3, 12, 8}, false, false},
                              BatchCase{{3, 12, 7}, {3, 8, 12}, true, true},
                              BatchCase{{17, 9}, {4, 9, 13}, false, false}}) {
    for (int stages : {1, 2}) {
      GraphCase c(5);
      ir::Value *a = c.input("a", DType::F32, bc.a);
      ir::Value *b = c.input("b", DType::F32, bc.b);
      c.output(c.node(OpKind::MatMul, {a, b}, matmulAttrs(bc.transposeA, bc.transposeB)));
      int64_t k = bc.a[bc.a.size() - (bc.transposeA ? 2 : 1)];
      checkGpuContraction(c, k, DType::F32);
      checkGpuContraction(c, k, DType::F32, gpuGemm(32, 32, 8, 2, 2, stages, 4));
    }
  }
}

TEST_CASE("gpu matmul: every float dtype", "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  struct DTypeCase {
    DType dtype, accumulate;
  };
  for (DTypeCase d : {DTypeCase{DType::F64, DType::F64}, DTypeCase{DType::F32, DType::F32},
                      DTypeCase{DType::F32, DType::F64}, DTypeCase{DType::F16, DType::F32},
                      DTypeCase{DType::BF16, DType::F32}, DTypeCase{DType::F8E4M3, DType::F32},
                      DTypeCase{DType::F8E5M2, DType::F32}}) {
    checkGpuMatMul(37, 45, 29, std::nullopt, d.dtype, d.accumulate);
    checkGpuMatMul(33, 32, 40, gpuGemm(32, 32, 8, 2, 2, 2, 2), d.dtype, d.accumulate);
    checkGpuMatMul(19, 9, 33, smallTiles(1), d.dtype, d.accumulate, true, false);
  }
}

TEST_CASE("gpu matmul: integer operands wrap like the reference", "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  struct DTypeCase {
    DType dtype, accumulate;
  };
  for (DTypeCase d : {DTypeCase{DType::I8, DType::I32}, DTypeCase{DType::I8, DType::I64},
                      DTypeCase{DType::I32, DType::I32}, DTypeCase{DType::I64, DType::I64}}) {
    checkGpuMatMul(31, 41, 23, std::nullopt, d.dtype, d.accumulate);
    checkGpuMatMul(17, 33, 40, smallTiles(2), d.dtype, d.accumulate, false, true);
  }
}

TEST_CASE("gpu matmul: fused epilogues", "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  std::vector<std::optional<lower::Schedule>> schedules{std::nullopt, smallTiles(1),
                                                        smallTiles(2)};
  SECTION("bias and relu") {
    GraphCase c;
    ir::Value *x = c.input("x", DType::F32, {29, 37});
    ir::Value *w = c.input("w", DType::F32, {37, 43});
    ir::Value *bias = c.input("bias", DType::F32, {43});
    ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs());
    c.output(c.node(OpKind::Relu, {c.node(OpKind::Add, {mm, bias})}));
    CHECK(planContraction(c.graph()).group->root != planContraction(c.graph()).group->anchor);
    for (const auto &s : schedules)
      checkGpuContraction(c, 37, DType::F32, s);
  }
  SECTION("residual add") {
    GraphCase c;
    ir::Value *x = c.input("x", DType::F32, {2, 11, 37});
    ir::Value *w = c.input("w", DType::F32, {37, 19});
    ir::Value *residual = c.input("residual", DType::F32, {2, 11, 19});
    ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs());
    c.output(c.node(OpKind::Relu, {c.node(OpKind::Add, {residual, mm})}));
    for (const auto &s : schedules)
      checkGpuContraction(c, 37, DType::F32, s);
  }
  SECTION("casts to f16 and bf16") {
    for (DType to : {DType::F16, DType::BF16}) {
      GraphCase c;
      ir::Value *x = c.input("x", DType::F32, {21, 37});
      ir::Value *w = c.input("w", DType::F32, {37, 27});
      ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs());
      c.output(c.node(OpKind::Cast, {mm}, {{"dtype", to}}));
      for (const auto &s : schedules)
        checkGpuContraction(c, 37, DType::F32, s);
    }
  }
  SECTION("f16 operands, f16 bias, relu") {
    GraphCase c;
    ir::Value *x = c.input("x", DType::F16, {19, 37});
    ir::Value *w = c.input("w", DType::F16, {37, 23});
    ir::Value *bias = c.input("bias", DType::F16, {23});
    ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs());
    c.output(c.node(OpKind::Relu, {c.node(OpKind::Add, {mm, bias})}));
    for (const auto &s : schedules)
      checkGpuContraction(c, 37, DType::F32, s);
  }
  SECTION("integer requantization: i8 matmul plus i32 bias, cast to i8") {
    GraphCase c;
    ir::Value *x = c.input("x", DType::I8, {17, 37});
    ir::Value *w = c.input("w", DType::I8, {37, 21});
    ir::Value *bias = c.input("bias", DType::I32, {21});
    ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs(false, false, DType::I32));
    c.output(c.node(OpKind::Cast, {c.node(OpKind::Add, {mm, bias})}, {{"dtype", DType::I8}}));
    for (const auto &s : schedules)
      checkGpuContraction(c, 37, DType::I32, s);
  }
}

TEST_CASE("gpu matmul: split-K on CUDA cores", "[lower][gpu-contraction][split-k]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  auto split = [](lower::GpuMatMulSchedule s, int splits) {
    s.splitK = splits;
    return s;
  };
  // K = 203 is 26 tiles of 8: 2 splits of 13, 3 of 9 (the last 8), 5 of 6 (the last 2), with
  // double buffering and without; f64 and integer accumulators sum their partials exactly.
  for (int stages : {1, 2})
    for (int splits : {2, 3, 5})
      checkGpuMatMul(33, 19, 203, split(smallTiles(stages), splits));
  checkGpuMatMul(17, 9, 130, split(smallTiles(2), 4), DType::F64, DType::F64, true, true);
  checkGpuMatMul(20, 24, 96, split(smallTiles(2), 3), DType::I8, DType::I32);
  // The default splits a narrow output over a long K (a few tiles on 132 SMs).
  GraphCase c;
  ir::Value *x = c.input("x", DType::F32, {9, 4096});
  ir::Value *w = c.input("w", DType::F32, {4096, 24});
  c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs()));
  PlannedContraction planned = planContraction(c.graph());
  lower::GpuMatMulSchedule d = gemmOf(
      lower::defaultSchedule(c.graph(), *planned.group, gpuTestTarget()));
  INFO(lower::scheduleStr(d));
  CHECK(d.splitK > 1);
  checkGpuContraction(c, 4096, DType::F32);
}
