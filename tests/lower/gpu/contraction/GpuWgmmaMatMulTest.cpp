// The warpgroup (wgmma) GEMM template on the SIMT simulator against the reference
// interpreter: which GEMMs take it, its schedules, and f16/bf16/e4m3 operands at sizes below,
// at and above the tiles, both orientations of each 16-bit operand, every pipeline depth and
// split-K. The simulator reads wgmma operands through their descriptors in the 128-byte
// swizzled layout and runs each product only when a wait retires it, so a layout, descriptor
// or pipeline mistake fails here; ptxas assembles every kernel for sm_90a.
#include "lower/gpu/contraction/GpuContractionTestUtil.h"

#include "passes/lower/gpu/GpuWgmmaSchedule.h"

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;

namespace {

lower::GpuMatMulSchedule wgmmaTiles(int blockM, int blockN, int blockK, int warpM, int warpN,
                                    int stages, int splitK = 1) {
  lower::GpuMatMulSchedule s = mmaTiles(blockM, blockN, blockK, warpM, warpN, stages);
  s.wgmma = true;
  s.splitK = splitK;
  return s;
}

/// x[m, k] @ w[k, n] (or transposed operands) in `dtype` on warpgroup products.
void checkWgmmaMatMul(int64_t m, int64_t n, int64_t k, std::optional<lower::GpuMatMulSchedule> s,
                      DType dtype = DType::BF16, bool transposeA = false,
                      bool transposeB = false) {
  INFO(fmt::format("{} x {} x {} {} transposes {}{}", m, n, k, dtypeName(dtype), transposeA,
                   transposeB));
  GraphCase c(11);
  ir::Value *x = c.input("x", dtype, transposeA ? std::vector<int64_t>{k, m}
                                                : std::vector<int64_t>{m, k});
  ir::Value *w = c.input("w", dtype, transposeB ? std::vector<int64_t>{n, k}
                                                : std::vector<int64_t>{k, n});
  c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs(transposeA, transposeB)));
  PlannedContraction planned = planContraction(c.graph());
  lower::GemmShape shape = lower::gpuContractionGemmShape(*planned.group);
  lower::GpuMatMulSchedule chosen = s ? *s : lower::defaultGpuWgmmaSchedule(shape, gpuTestTarget());
  REQUIRE(chosen.wgmma);
  checkGpuContraction(c, k, DType::F32, lower::Schedule{chosen});
}

lower::GemmShape matmulShape(DType dtype, int64_t m, int64_t n, int64_t k,
                             bool transposeB = false) {
  GraphCase c;
  ir::Value *x = c.input("x", dtype, {m, k});
  ir::Value *w = c.input("w", dtype, transposeB ? std::vector<int64_t>{n, k}
                                                : std::vector<int64_t>{k, n});
  ir::AttrMap attrs = matmulAttrs(false, transposeB);
  attrs["accumulate"] = DType::F32;
  c.output(c.node(OpKind::MatMul, {x, w}, attrs));
  return lower::gpuContractionGemmShape(*planContraction(c.graph()).group);
}

} // namespace

TEST_CASE("gpu wgmma: which GEMMs run on warpgroup products", "[lower][gpu-contraction][wgmma]") {
  const codegen::GpuTarget &h100 = gpuTestTarget(); // sm_90a
  using kir::WgmmaKind;
  CHECK(lower::gpuWgmmaKindFor(matmulShape(DType::BF16, 64, 64, 64), h100) == WgmmaKind::BF16_K16);
  CHECK(lower::gpuWgmmaKindFor(matmulShape(DType::F16, 64, 64, 64), h100) == WgmmaKind::F16_K16);
  // e4m3 only with K contiguous in both operands (the ISA transposes 16-bit operands only).
  CHECK_FALSE(lower::gpuWgmmaKindFor(matmulShape(DType::F8E4M3, 64, 64, 64), h100));
  CHECK(lower::gpuWgmmaKindFor(matmulShape(DType::F8E4M3, 64, 64, 64, true), h100) ==
        WgmmaKind::E4M3_K32);
  CHECK_FALSE(lower::gpuWgmmaKindFor(matmulShape(DType::F32, 64, 64, 64), h100));
  // Only the arch-specific sm_90a has wgmma.
  for (std::string_view arch : {"sm_80", "sm_89", "sm_90"}) {
    auto target = codegen::gpuTargetNamed(arch);
    REQUIRE(target);
    CHECK_FALSE(lower::gpuWgmmaKindFor(matmulShape(DType::BF16, 64, 64, 64), *target));
    CHECK(lower::gpuWgmmaScheduleSpace(matmulShape(DType::BF16, 64, 64, 64), *target).empty());
  }

  // Defaults are legal; the space leads with the default, is all legal, and joins the mma.sync
  // space the tuner searches.
  for (auto [m, n, k] : {std::tuple{8192, 8192, 8192}, {512, 768, 768}, {17, 64, 40}}) {
    lower::GemmShape shape = matmulShape(DType::BF16, m, n, k);
    lower::GpuMatMulSchedule d = lower::defaultGpuWgmmaSchedule(shape, h100);
    INFO(lower::scheduleStr(d));
    CHECK(d.wgmma);
    CHECK(lower::checkGpuMmaSchedule(d, shape, h100));
    std::vector<lower::GpuMatMulSchedule> space = lower::gpuWgmmaScheduleSpace(shape, h100);
    REQUIRE(space.size() > 10);
    CHECK(lower::scheduleStr(space.front()) == lower::scheduleStr(d));
    for (const auto &s : space)
      CHECK(lower::checkGpuMmaSchedule(s, shape, h100));
    size_t inMma = 0;
    for (const auto &s : lower::gpuMmaScheduleSpace(shape, h100))
      inMma += s.wgmma;
    CHECK(inMma == space.size());
  }
  // A large GEMM: 128 x 256 tiles of two warpgroups, four 48 KiB stages in dynamic shared memory.
  lower::GpuMatMulSchedule big =
      lower::defaultGpuWgmmaSchedule(matmulShape(DType::BF16, 8192, 8192, 8192), h100);
  CHECK(lower::scheduleStr(big) ==
        "gpu.matmul wgmma bm=128 bn=256 bk=64 wm=64 wn=256 stages=4 vw=8 splitk=1 group=8");
  CHECK(lower::gpuMmaThreads(big) == 256);
  // An output 64 wide over many rows (VGG16's first convolution as a GEMM): 128 x 64, not a
  // 128-wide tile whose second half lies past the edge.
  lower::GpuMatMulSchedule narrow =
      lower::defaultGpuWgmmaSchedule(matmulShape(DType::BF16, 401408, 64, 576), h100);
  INFO(lower::scheduleStr(narrow));
  CHECK(narrow.blockM == 128);
  CHECK(narrow.blockN == 64);
  CHECK(narrow.warpN == 64);
  // The text form round-trips.
  auto parsed = lower::parseSchedule(lower::scheduleStr(big));
  INFO((parsed ? std::string() : parsed.error().str()));
  REQUIRE(parsed);
  CHECK(gemmOf(*parsed) == big);
}

TEST_CASE("gpu wgmma: illegal schedules name the field", "[lower][gpu-contraction][wgmma]") {
  const codegen::GpuTarget &h100 = gpuTestTarget();
  lower::GemmShape shape = matmulShape(DType::BF16, 256, 256, 256);
  auto why = [&](const lower::GpuMatMulSchedule &s, const lower::GemmShape &on) {
    auto checked = lower::checkGpuMmaSchedule(s, on, h100);
    REQUIRE_FALSE(checked);
    return checked.error().message();
  };
  using Catch::Matchers::Contains;
  CHECK_THAT(why(wgmmaTiles(64, 64, 64, 32, 64, 2), shape), Contains("multiple of 64"));
  CHECK_THAT(why(wgmmaTiles(64, 264, 64, 64, 264, 2), shape), Contains("8 .. 256"));
  // B N-contiguous: whole 128-byte panels of N per warpgroup.
  CHECK_THAT(why(wgmmaTiles(64, 96, 64, 64, 96, 2), shape), Contains("panels"));
  CHECK(lower::checkGpuMmaSchedule(wgmmaTiles(64, 96, 64, 64, 96, 2),
                                   matmulShape(DType::BF16, 256, 256, 256, true), h100));
  CHECK_THAT(why(wgmmaTiles(64, 64, 32, 64, 64, 2), shape), Contains("blockK must be 64"));
  CHECK_THAT(why(wgmmaTiles(64, 64, 64, 64, 64, 5), shape), Contains("stages"));
  CHECK_THAT(why(wgmmaTiles(128, 256, 64, 128, 256, 2), shape), Contains("accumulators"));
  CHECK_THAT(why(wgmmaTiles(256, 256, 64, 64, 256, 4), shape), Contains("a block may have"));
  // The register file: four warpgroups of 128 accumulators (ptxas gives up), a fifth, the
  // producer, beside them, and four of 64 accumulators with two 64-row slices (spills).
  CHECK_THAT(why(wgmmaTiles(256, 256, 64, 64, 256, 2), shape), Contains("exceed the 128 each of 512"));
  lower::GpuMatMulSchedule fed = wgmmaTiles(256, 256, 64, 64, 256, 2);
  fed.tma = true;
  CHECK_THAT(why(fed, shape), Contains("exceed the 96 each of 640"));
  CHECK_THAT(why(wgmmaTiles(256, 256, 64, 128, 64, 2), shape), Contains("exceed the 64 each of 1024"));
  CHECK_THAT(why(wgmmaTiles(64, 64, 64, 64, 64, 2, 17), shape), Contains("split"));
  auto sm80 = codegen::gpuTargetNamed("sm_80");
  REQUIRE(sm80);
  auto onSm80 = lower::checkGpuMmaSchedule(wgmmaTiles(64, 64, 64, 64, 64, 2), shape, *sm80);
  REQUIRE_FALSE(onSm80);
  CHECK_THAT(onSm80.error().message(), Contains("no warpgroup product"));
}

TEST_CASE("gpu wgmma: sizes below, at and above the tiles", "[lower][gpu-contraction][wgmma]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas (sm_90a)
  for (DType dtype : {DType::BF16, DType::F16}) {
    for (int64_t m : {1, 17, 64, 65})
      checkWgmmaMatMul(m, 72, 80, wgmmaTiles(64, 64, 64, 64, 64, 2), dtype);
    for (int64_t k : {2, 16, 64, 136})
      checkWgmmaMatMul(19, 64, k, wgmmaTiles(64, 64, 64, 64, 64, 3), dtype);
  }
  checkWgmmaMatMul(64, 64, 64, wgmmaTiles(64, 64, 64, 64, 64, 2)); // exact: unguarded paths
  checkWgmmaMatMul(70, 136, 150, std::nullopt);                     // the default schedule
}

TEST_CASE("gpu wgmma: operand orientations, tiles and pipeline depths",
          "[lower][gpu-contraction][wgmma]") {
  AssemblyBatch assembly;
  // K-major and MN-major operands, each way round (the transpose bits of the product).
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      checkWgmmaMatMul(70, 130, 100, wgmmaTiles(64, 128, 64, 64, 128, 3), DType::BF16, ta, tb);
  // B K-contiguous allows warp tiles that are not whole 128-byte panels of N.
  checkWgmmaMatMul(40, 50, 70, wgmmaTiles(64, 32, 64, 64, 16, 2), DType::BF16, false, true);
  for (int stages : {2, 3, 4}) {
    checkWgmmaMatMul(65, 72, 328, wgmmaTiles(64, 64, 64, 64, 64, stages)); // 6 K tiles
    checkWgmmaMatMul(65, 72, 40, wgmmaTiles(64, 64, 64, 64, 64, stages));  // fewer than stages
  }
  // Several warpgroups: two along M, two along N, and a warpgroup of two 64-row slices.
  checkWgmmaMatMul(130, 136, 96, wgmmaTiles(128, 128, 64, 64, 128, 3));
  checkWgmmaMatMul(130, 136, 96, wgmmaTiles(64, 256, 64, 64, 128, 2));
  checkWgmmaMatMul(130, 72, 96, wgmmaTiles(128, 64, 64, 128, 64, 2));
  // The large-GEMM default: two warpgroups of 64 x 256 (128 accumulators a thread), 4 stages.
  checkWgmmaMatMul(130, 264, 330, wgmmaTiles(128, 256, 64, 64, 256, 4));
}

TEST_CASE("gpu wgmma: split-K and e4m3", "[lower][gpu-contraction][wgmma]") {
  AssemblyBatch assembly;
  checkWgmmaMatMul(40, 72, 700, wgmmaTiles(64, 64, 64, 64, 64, 3, 4)); // a short last split
  checkWgmmaMatMul(40, 72, 256, wgmmaTiles(64, 64, 64, 64, 64, 2, 2));
  for (int64_t m : {1, 65})
    checkWgmmaMatMul(m, 40, 200, wgmmaTiles(64, 64, 128, 64, 64, 2), DType::F8E4M3, false, true);
  checkWgmmaMatMul(33, 24, 96, std::nullopt, DType::F8E4M3, false, true);
}

TEST_CASE("gpu wgmma: nhwc conv2d as an implicit GEMM", "[lower][gpu-contraction][wgmma]") {
  AssemblyBatch assembly;
  // The im2col rows of A arrive by predicated copies of each tap's channels (zeros in the
  // padding); the filters are B, K-contiguous. With a fused bias and relu.
  for (auto [stride, padding] : {std::pair{1, 1}, {2, 0}}) {
    INFO("stride " << stride << " padding " << padding);
    GraphCase c(17);
    ir::Value *x = c.input("x", DType::BF16, {2, 9, 7, 24});
    ir::Value *w = c.input("w", DType::BF16, {40, 3, 3, 24});
    ConvParams p;
    p.layout = "nhwc";
    p.stride = {stride, stride};
    p.padding = {padding, padding, padding, padding};
    ir::Value *conv = c.node(OpKind::Conv2D, {x, w}, p.attrs());
    ir::Value *bias = c.input("bias", DType::BF16, {40});
    c.output(c.node(OpKind::Relu, {c.node(OpKind::Add, {conv, bias})}));
    PlannedContraction planned = planContraction(c.graph());
    lower::GemmShape shape = lower::gpuContractionGemmShape(*planned.group);
    REQUIRE(lower::gpuWgmmaKindFor(shape, gpuTestTarget()));
    for (const lower::GpuMatMulSchedule &s :
         {lower::defaultGpuWgmmaSchedule(shape, gpuTestTarget()),
          wgmmaTiles(64, 64, 64, 64, 64, 3), wgmmaTiles(128, 64, 64, 64, 32, 2)}) {
      checkGpuContraction(c, 3 * 3 * 24, DType::F32, lower::GpuConv2DSchedule{s});
    }
  }
}

TEST_CASE("gpu wgmma: the large-GEMM default assembles without spills",
          "[lower][gpu-contraction][wgmma]") {
  // 128 x 256 tiles of two warpgroups hold 128 accumulators a thread: they must stay in
  // registers (ptxas, both backends, sm_90a), as the default schedule they would become does.
  lower::GpuMatMulSchedule big =
      lower::defaultGpuWgmmaSchedule(matmulShape(DType::BF16, 8192, 8192, 8192), gpuTestTarget());
  for (const AssembledKernel &kernel :
       assembleMatMulWithoutSpills(130, 330, 264, big, "the 128 x 256 wgmma default"))
    WARN("128 x 256 wgmma tile (" << kernel.backend << "): " << kernel.resources.registers
                                  << " registers");
}

TEST_CASE("gpu tensor cores: schedules at the register file's edge assemble without spills",
          "[lower][gpu-contraction][wgmma][tma][mma]") {
  // The largest each rule of registerFileProblem admits, at the thread counts where the
  // register file is tightest: they must stay in registers (ptxas, both backends, sm_90a).
  lower::GpuMatMulSchedule fed = wgmmaTiles(256, 128, 64, 64, 128, 2);
  fed.tma = true;
  assembleMatMulWithoutSpills(130, 200, 264, wgmmaTiles(128, 256, 64, 64, 64, 2),
                              "wgmma, 32 accumulators for each of 1024 threads (64 registers)");
  assembleMatMulWithoutSpills(130, 200, 264, fed,
                              "wgmma fed by tma, 64 accumulators for each of 640 threads (96 "
                              "registers)");
  assembleMatMulWithoutSpills(130, 200, 264, mmaTiles(256, 128, 32, 32, 64, 2),
                              "mma.sync, 88 accumulator and fragment registers for each of 512 "
                              "threads (128)");
}

TEST_CASE("gpu tensor cores: the grouped tile order", "[lower][gpu-contraction][wgmma][mma]") {
  AssemblyBatch assembly;
  // 6 rows of tiles in groups of 4 (the last group has 2), 4 columns: every tile once, each
  // where the order puts it (a tile computed twice and one never would leave poison).
  lower::GpuMatMulSchedule wgmma = wgmmaTiles(64, 64, 64, 64, 64, 2);
  wgmma.groupM = 4;
  checkWgmmaMatMul(330, 200, 64, wgmma);
  lower::GpuMatMulSchedule mma = mmaTiles(64, 64, 32, 32, 32, 2);
  mma.groupM = 4;
  GraphCase c(19);
  ir::Value *x = c.input("x", DType::BF16, {330, 96});
  ir::Value *w = c.input("w", DType::BF16, {96, 200});
  c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs(false, false)));
  checkGpuContraction(c, 96, DType::F32, lower::Schedule{mma});
  // With a split too: the tile order is per (batch, split) layer.
  mma.splitK = 2;
  checkGpuContraction(c, 96, DType::F32, lower::Schedule{mma});

  // The text form carries it; CUDA-core schedules refuse it; large grids default to it on wgmma.
  auto parsed = lower::parseSchedule(lower::scheduleStr(lower::Schedule{wgmma}));
  REQUIRE(parsed);
  CHECK(gemmOf(*parsed).groupM == 4);
  lower::GpuMatMulSchedule simt = gpuGemm(64, 64, 16, 4, 4, 2);
  simt.groupM = 8;
  auto refused = lower::lowerGroup(c.graph(), *planContraction(c.graph()).group, simt,
                                   gpuTestTarget());
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message(), Catch::Matchers::Contains("groupM"));
  const codegen::GpuTarget &h100 = gpuTestTarget();
  CHECK(lower::defaultGpuWgmmaSchedule(matmulShape(DType::BF16, 8192, 8192, 8192), h100).groupM ==
        8);
  CHECK(lower::defaultGpuWgmmaSchedule(matmulShape(DType::BF16, 512, 768, 768), h100).groupM == 1);
  CHECK(lower::defaultGpuMmaSchedule(matmulShape(DType::BF16, 8192, 8192, 8192), h100).groupM == 1);
  size_t grouped = 0;
  for (const auto &s : lower::gpuMmaScheduleSpace(matmulShape(DType::BF16, 8192, 8192, 8192), h100))
    grouped += s.groupM != 1;
  CHECK(grouped >= 2); // the mma default's grouped variant and the wgmma default
}
