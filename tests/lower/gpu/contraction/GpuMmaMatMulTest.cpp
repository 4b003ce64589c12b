// The tensor-core GEMM template on the SIMT simulator against the reference interpreter:
// which GEMMs take it, f16/bf16/tf32 operands at sizes below, at and above the tiles, every
// pipeline depth and tile shape, both orientations of each operand, broadcast batches and
// fused epilogues. The simulator executes mma.sync, ldmatrix and cp.async with the PTX lane
// layouts and late-landing copies, so a pipeline that reads a stage too early fails here.
#include "lower/gpu/contraction/GpuContractionTestUtil.h"

#include "passes/lower/gpu/GpuMmaSchedule.h"

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;

namespace {

ir::AttrMap mmaAttrs(bool transposeA, bool transposeB, bool tf32) {
  ir::AttrMap attrs = matmulAttrs(transposeA, transposeB);
  if (tf32)
    attrs["allow_tf32"] = true;
  return attrs;
}

/// x[m, k] @ w[k, n] (or transposed operands) in `dtype` on tensor cores; f32 allows tf32.
void checkMmaMatMul(int64_t m, int64_t n, int64_t k, std::optional<lower::Schedule> schedule,
                    DType dtype = DType::BF16, bool transposeA = false, bool transposeB = false,
                    uint64_t seed = 7) {
  INFO(fmt::format("{} x {} x {} {} transposes {}{}", m, n, k, dtypeName(dtype), transposeA,
                   transposeB));
  GraphCase c(seed);
  ir::Value *x = c.input("x", dtype, transposeA ? std::vector<int64_t>{k, m}
                                                : std::vector<int64_t>{m, k});
  ir::Value *w = c.input("w", dtype, transposeB ? std::vector<int64_t>{n, k}
                                                : std::vector<int64_t>{k, n});
  bool tf32 = dtype == DType::F32;
  c.output(c.node(OpKind::MatMul, {x, w}, mmaAttrs(transposeA, transposeB, tf32)));
  PlannedContraction planned = planContraction(c.graph());
  lower::Schedule chosen =
      schedule ? *schedule
               : lower::defaultSchedule(c.graph(), *planned.group, gpuTestTarget());
  REQUIRE(gemmOf(chosen).tensorCores());
  checkGpuContraction(c, k, DType::F32, chosen, tf32 ? kTf32Scale : 1.0);
}

lower::GemmShape matmulShape(DType dtype, int64_t m, int64_t n, int64_t k, bool tf32 = false) {
  GraphCase c;
  ir::Value *x = c.input("x", dtype, {m, k});
  ir::Value *w = c.input("w", dtype, {k, n});
  ir::AttrMap attrs = mmaAttrs(false, false, tf32);
  attrs["accumulate"] = dtype == DType::F64 ? DType::F64 : DType::F32;
  c.output(c.node(OpKind::MatMul, {x, w}, attrs));
  return lower::gpuContractionGemmShape(*planContraction(c.graph()).group);
}

} // namespace

TEST_CASE("gpu mma: which GEMMs run on tensor cores", "[lower][gpu-contraction][mma]") {
  const codegen::GpuTarget &h100 = gpuTestTarget();
  auto sm80 = codegen::gpuTargetNamed("sm_80");
  REQUIRE(sm80);
  using kir::MmaKind;
  CHECK(lower::gpuMmaKindFor(matmulShape(DType::BF16, 64, 64, 64), h100) == MmaKind::BF16_M16N8K16);
  CHECK(lower::gpuMmaKindFor(matmulShape(DType::F16, 64, 64, 64), *sm80) == MmaKind::F16_M16N8K16);
  CHECK(lower::gpuMmaKindFor(matmulShape(DType::F32, 64, 64, 64, true), h100) ==
        MmaKind::TF32_M16N8K8);
  // f32 without allow_tf32 keeps its precision on CUDA cores; f64 and integers too.
  CHECK_FALSE(lower::gpuMmaKindFor(matmulShape(DType::F32, 64, 64, 64), h100));
  CHECK_FALSE(lower::gpuMmaKindFor(matmulShape(DType::F64, 64, 64, 64), h100));
  // A 16-bit row of odd length cannot be copied in 4-byte pieces.
  CHECK_FALSE(lower::gpuMmaKindFor(matmulShape(DType::BF16, 64, 64, 37), h100));
  CHECK_FALSE(lower::gpuMmaKindFor(matmulShape(DType::BF16, 64, 37, 64), h100));
  // Odd M is fine: M is not the contiguous axis of either operand.
  CHECK(lower::gpuMmaKindFor(matmulShape(DType::BF16, 37, 64, 64), h100));

  // The defaults are legal and use 4 warps; the space leads with the default and is all legal.
  for (auto [m, n, k] : {std::tuple{8192, 8192, 8192}, {512, 768, 768}, {17, 24, 40}}) {
    lower::GemmShape shape = matmulShape(DType::BF16, m, n, k);
    lower::GpuMatMulSchedule d = lower::defaultGpuMmaSchedule(shape, h100);
    INFO(lower::scheduleStr(d));
    CHECK(lower::checkGpuMmaSchedule(d, shape, h100));
    CHECK(lower::gpuMmaThreads(d) == 128);
    std::vector<lower::GpuMatMulSchedule> space = lower::gpuMmaScheduleSpace(shape, h100);
    REQUIRE(space.size() > 20);
    CHECK(lower::scheduleStr(space.front()) == lower::scheduleStr(d));
    for (const auto &s : space)
      CHECK(lower::checkGpuMmaSchedule(s, shape, h100));
  }
  // A large GEMM gets the 128 x 128 tile and as many stages as 48 KiB of shared memory hold.
  lower::GpuMatMulSchedule big =
      lower::defaultGpuMmaSchedule(matmulShape(DType::BF16, 8192, 8192, 8192), h100);
  CHECK(big.blockM == 128);
  CHECK(big.blockN == 128);
  CHECK(big.stages == 3);
}

TEST_CASE("gpu mma: illegal schedules name the field", "[lower][gpu-contraction][mma]") {
  const codegen::GpuTarget &h100 = gpuTestTarget();
  lower::GemmShape shape = matmulShape(DType::BF16, 64, 64, 64);
  auto why = [&](const lower::GpuMatMulSchedule &s) {
    auto checked = lower::checkGpuMmaSchedule(s, shape, h100);
    REQUIRE_FALSE(checked);
    return checked.error().message();
  };
  CHECK_THAT(why(mmaTiles(64, 64, 32, 24, 32, 2)), Catch::Matchers::Contains("multiples of 16"));
  CHECK_THAT(why(mmaTiles(64, 64, 32, 64, 64, 5)), Catch::Matchers::Contains("stages"));
  CHECK_THAT(why(mmaTiles(64, 64, 8, 32, 32, 2)), Catch::Matchers::Contains("blockK"));
  // 256 KiB of tiles: more than an H100 block may have even with the opt-in (227 KiB).
  CHECK_THAT(why(mmaTiles(256, 256, 128, 64, 64, 2)), Catch::Matchers::Contains("a block may have"));
  CHECK_THAT(why(mmaTiles(64, 64, 32, 32, 32, 2, 16)), Catch::Matchers::Contains("vectorWidth"));
  CHECK_THAT(why(mmaTiles(128, 128, 32, 128, 64, 2)), Catch::Matchers::Contains("registers"));
  // Sixteen warps of 160 accumulator and fragment registers each: more than the 128 a thread
  // of 512 may have (ptxas spilled 340-980 bytes).
  CHECK_THAT(why(mmaTiles(256, 256, 32, 64, 64, 2)),
             Catch::Matchers::Contains("exceed the 128 each of 512 threads"));
  auto sm75 = h100;
  sm75.sm = 75;
  CHECK_FALSE(lower::checkGpuMmaSchedule(mmaTiles(64, 64, 32, 32, 32, 2), shape, sm75));
}

TEST_CASE("gpu mma: sizes below, at and above the tiles", "[lower][gpu-contraction][mma]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (DType dtype : {DType::BF16, DType::F16, DType::F32}) {
    for (int64_t s : {1, 7, 16, 33, 64, 65})
      checkMmaMatMul(s, 24, 40, std::nullopt, dtype);
    for (int64_t n : {8, 24, 72})
      checkMmaMatMul(33, n, 32, std::nullopt, dtype);
    for (int64_t k : {2, 8, 48, 96})
      checkMmaMatMul(19, 16, k, std::nullopt, dtype);
  }
}

TEST_CASE("gpu mma: pipeline depths and tile shapes", "[lower][gpu-contraction][mma]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (int stages : {2, 3, 4}) {
    checkMmaMatMul(70, 40, 136, mmaTiles(32, 32, 16, 16, 16, stages));     // 9 K tiles
    checkMmaMatMul(70, 40, 24, mmaTiles(32, 32, 16, 16, 16, stages));      // fewer tiles than stages
    checkMmaMatMul(70, 40, 136, mmaTiles(32, 32, 8, 16, 16, stages, 4), DType::F32);
  }
  for (const auto &s : {mmaTiles(64, 64, 32, 32, 32, 2), mmaTiles(64, 32, 64, 32, 16, 3),
                        mmaTiles(32, 64, 32, 16, 32, 2), mmaTiles(128, 64, 32, 64, 32, 2),
                        mmaTiles(32, 32, 32, 32, 32, 2) /* one warp */}) {
    checkMmaMatMul(65, 72, 80, s);
    checkMmaMatMul(64, 64, 64, s); // exact multiples: the unguarded paths
  }
  // Narrower async copies: 8 and 4 bytes, where the rows only hold that much.
  checkMmaMatMul(33, 20, 44, std::nullopt);                          // K = 4 x 11: 8-byte copies
  checkMmaMatMul(33, 18, 38, std::nullopt);                          // even runs: 4-byte copies
  checkMmaMatMul(33, 40, 48, mmaTiles(32, 32, 16, 16, 16, 2, 2));    // vectorWidth 2 by choice
}

TEST_CASE("gpu mma: tiles past 48 KiB in dynamic shared memory", "[lower][gpu-contraction][mma]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  // 128 x 128 tiles with 4 stages of 32 (64 KiB), and 128 x 256 with 3 (72 KiB); the
  // default keeps within the static 48 KiB.
  checkMmaMatMul(130, 136, 200, mmaTiles(128, 128, 32, 64, 64, 4));
  checkMmaMatMul(129, 264, 96, mmaTiles(128, 256, 32, 64, 64, 3));
  lower::GemmShape shape = matmulShape(DType::BF16, 8192, 8192, 8192);
  lower::GpuMatMulSchedule d = lower::defaultGpuMmaSchedule(shape, gpuTestTarget());
  CHECK(lower::gpuMmaSharedBytes(d, DType::BF16) <= gpuTestTarget().staticSharedBytesPerBlock);
  size_t dynamic = 0;
  for (const auto &s : lower::gpuMmaScheduleSpace(shape, gpuTestTarget()))
    dynamic += lower::gpuMmaSharedBytes(s, DType::BF16) > gpuTestTarget().staticSharedBytesPerBlock;
  CHECK(dynamic > 0); // the tuner may try them
}

TEST_CASE("gpu mma: both orientations of each operand", "[lower][gpu-contraction][mma]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (DType dtype : {DType::BF16, DType::F32})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        checkMmaMatMul(48, 40, 56, std::nullopt, dtype, ta, tb);
        checkMmaMatMul(64, 32, 64, mmaTiles(32, 32, 16, 16, 16, 3, dtype == DType::F32 ? 4 : 8),
                       dtype, ta, tb);
      }
}

TEST_CASE("gpu mma: batches and fused epilogues", "[lower][gpu-contraction][mma]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  SECTION("batched, broadcast, folded") {
    struct BatchCase {
      std::vector<int64_t> a, b;
    };
    for (const BatchCase &bc : {BatchCase{{2, 3, 17, 16}, {3, 16, 24}},
                                BatchCase{{5, 17, 16}, {16, 24}}, // batch folded into M
                                BatchCase{{2, 1, 7, 32}, {1, 3, 32, 8}}}) {
      GraphCase c(5);
      ir::Value *a = c.input("a", DType::BF16, bc.a);
      ir::Value *b = c.input("b", DType::BF16, bc.b);
      c.output(c.node(OpKind::MatMul, {a, b}, matmulAttrs()));
      checkGpuContraction(c, bc.a.back(), DType::F32);
      checkGpuContraction(c, bc.a.back(), DType::F32, mmaTiles(32, 32, 16, 16, 16, 2));
    }
  }
  SECTION("bias and relu in bf16") {
    GraphCase c;
    ir::Value *x = c.input("x", DType::BF16, {29, 40});
    ir::Value *w = c.input("w", DType::BF16, {40, 24});
    ir::Value *bias = c.input("bias", DType::BF16, {24});
    ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs());
    // The output stays bf16: its rounding bounds the difference (a sum rounded from f32 may
    // land one bf16 step away from the fp64 reference's).
    c.output(c.node(OpKind::Relu, {c.node(OpKind::Add, {mm, bias})}));
    checkGpuContraction(c, 40, DType::F32);
    checkGpuContraction(c, 40, DType::F32, mmaTiles(32, 32, 16, 16, 16, 3));
  }
}

namespace {

lower::GpuMatMulSchedule splitK(lower::GpuMatMulSchedule s, int splits) {
  s.splitK = splits;
  return s;
}

} // namespace

TEST_CASE("gpu mma: split-K", "[lower][gpu-contraction][mma]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  lower::GpuMatMulSchedule small = mmaTiles(32, 32, 16, 16, 16, 2);
  // K = 328 is 21 tiles of 16: 3 splits of 7, 4 of 6 (the last 3), 5 of 5 (the last 1).
  for (int splits : {2, 3, 4, 5})
    checkMmaMatMul(33, 40, 328, splitK(small, splits));
  // Three stages with splits no longer than the pipeline (the prologue's copies are per split);
  // K = 114 is 8 tiles, the last holding 2 (4-byte copies, the rest zeros): 3 splits of 3, 3
  // and 2 tiles, 4 of 2.
  for (int splits : {3, 4})
    checkMmaMatMul(70, 24, 114, splitK(mmaTiles(32, 32, 16, 16, 16, 3), splits));
  checkMmaMatMul(64, 64, 256, splitK(mmaTiles(64, 64, 32, 32, 32, 3), 4)); // no edges anywhere
  // N = 26: the sum kernel takes one element a thread (four where 4 divides N, as above).
  checkMmaMatMul(33, 26, 328, splitK(small, 3));
  for (DType dtype : {DType::F16, DType::F32})
    checkMmaMatMul(18, 24, 200, splitK(mmaTiles(32, 32, 16, 16, 16, 2, dtype == DType::F32 ? 4 : 8),
                                       3),
                   dtype, /*transposeA=*/true, /*transposeB=*/true);

  SECTION("batched, with a fused epilogue after the sum") {
    GraphCase c(11);
    ir::Value *a = c.input("a", DType::BF16, {3, 19, 96});
    ir::Value *b = c.input("b", DType::BF16, {3, 96, 24});
    ir::Value *bias = c.input("bias", DType::BF16, {24});
    ir::Value *mm = c.node(OpKind::MatMul, {a, b}, matmulAttrs());
    c.output(c.node(OpKind::Relu, {c.node(OpKind::Add, {mm, bias})}));
    checkGpuContraction(c, 96, DType::F32, splitK(small, 3));
  }
}

TEST_CASE("gpu mma: when the default splits K", "[lower][gpu-contraction][mma]") {
  const codegen::GpuTarget &h100 = gpuTestTarget();
  // 512 x 512 outputs are 16 tiles of 128 x 128 on 132 SMs: K = 8192 is shared out, each split
  // keeping at least 4 of its 256 tiles, the grid within one wave.
  lower::GemmShape narrow = matmulShape(DType::BF16, 512, 512, 8192);
  lower::GpuMatMulSchedule d = lower::defaultGpuMmaSchedule(narrow, h100);
  INFO(lower::scheduleStr(d));
  CHECK(d.splitK > 1);
  CHECK(d.splitK * lower::ceilDiv(512, d.blockM) * lower::ceilDiv(512, d.blockN) <= h100.numSms);
  CHECK(lower::checkGpuMmaSchedule(d, narrow, h100));
  std::vector<lower::GpuMatMulSchedule> space = lower::gpuMmaScheduleSpace(narrow, h100);
  size_t unsplit = 0;
  for (const auto &s : space) {
    CHECK(lower::checkGpuMmaSchedule(s, narrow, h100));
    unsplit += s.splitK == 1 ? 1 : 0;
  }
  CHECK(unsplit > 0);
  CHECK(unsplit < space.size());
  // The same tile unsplit is in the space: the tuner can refute the heuristic.
  CHECK(std::count(space.begin(), space.end(), splitK(d, 1)) == 1);

  // Grids that fill the SMs, short K, or K too short to give each split 4 tiles: no split.
  for (auto [m, n, k] : {std::tuple{4096, 4096, 4096}, {512, 512, 64}, {64, 64, 96}}) {
    lower::GemmShape shape = matmulShape(DType::BF16, m, n, k);
    INFO(m << " x " << n << " x " << k);
    CHECK(lower::defaultGpuMmaSchedule(shape, h100).splitK == 1);
  }
}

TEST_CASE("gpu mma: illegal K splits", "[lower][gpu-contraction][mma]") {
  const codegen::GpuTarget &h100 = gpuTestTarget();
  lower::GemmShape shape = matmulShape(DType::BF16, 64, 64, 328); // 21 tiles of 16
  auto why = [&](const lower::GpuMatMulSchedule &s) {
    auto checked = lower::checkGpuMmaSchedule(s, shape, h100);
    REQUIRE_FALSE(checked);
    return checked.error().message();
  };
  lower::GpuMatMulSchedule s = mmaTiles(32, 32, 16, 16, 16, 2);
  CHECK(lower::checkGpuMmaSchedule(splitK(s, 11), shape, h100)); // 10 splits of 2, then 1
  // 12 splits of 2 tiles need 23: the last would have none.
  CHECK_THAT(why(splitK(s, 12)), Catch::Matchers::Contains("without K tiles"));
  CHECK_THAT(why(splitK(s, 17)), Catch::Matchers::Contains("splitK must be 1 to 16"));
  CHECK_THAT(why(splitK(s, 0)), Catch::Matchers::Contains("splitK"));
}

TEST_CASE("gpu mma: e4m3 operands", "[lower][gpu-contraction][mma]") {
  const codegen::GpuTarget &h100 = gpuTestTarget();
  auto sm80 = codegen::gpuTargetNamed("sm_80"), sm89 = codegen::gpuTargetNamed("sm_89");
  REQUIRE(sm80);
  REQUIRE(sm89);
  lower::GemmShape shape = matmulShape(DType::F8E4M3, 64, 64, 64);
  CHECK(lower::gpuMmaKindFor(shape, h100) == kir::MmaKind::E4M3_M16N8K32);
  CHECK(lower::gpuMmaKindFor(shape, *sm89) == kir::MmaKind::E4M3_M16N8K32);
  CHECK_FALSE(lower::gpuMmaKindFor(shape, *sm80)); // no e4m3 product before sm_89
  // Byte rows must still split into 4-byte copies.
  CHECK_FALSE(lower::gpuMmaKindFor(matmulShape(DType::F8E4M3, 64, 64, 38), h100));
  lower::GpuMatMulSchedule d = lower::defaultGpuMmaSchedule(shape, h100);
  CHECK(d.blockK == 64); // 64 bytes of a row per stage
  CHECK(d.vectorWidth == 16);
  lower::GemmShape projection = matmulShape(DType::F8E4M3, 512, 768, 768);
  for (const auto &s : lower::gpuMmaScheduleSpace(projection, h100))
    CHECK(lower::checkGpuMmaSchedule(s, projection, h100));

  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (int64_t m : {1, 17, 64, 65})
    checkMmaMatMul(m, 24, 96, std::nullopt, DType::F8E4M3);
  for (int64_t k : {4, 36, 200})
    checkMmaMatMul(19, 16, k, std::nullopt, DType::F8E4M3);
  // K-contiguous operands come by ldmatrix (A as stored, B transposed); the others element by
  // element at the fragment layout.
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      checkMmaMatMul(48, 40, 72, std::nullopt, DType::F8E4M3, ta, tb);
      checkMmaMatMul(64, 32, 128, mmaTiles(32, 32, 32, 16, 16, 3, 16), DType::F8E4M3, ta, tb);
    }
  checkMmaMatMul(70, 48, 300, mmaTiles(64, 32, 128, 32, 16, 2, 16), DType::F8E4M3, false, true);
  checkMmaMatMul(33, 24, 44, mmaTiles(32, 32, 32, 16, 16, 2, 4), DType::F8E4M3); // 4-byte copies
  checkMmaMatMul(20, 24, 640, splitK(mmaTiles(32, 32, 64, 16, 16, 3, 16), 3), DType::F8E4M3,
                 false, true);
}
