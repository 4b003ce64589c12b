// Contraction schedules: the heuristic default on fixed targets (AVX2 and AVX-512), the
// legality checks and their messages, and the tuning space, every member of which must
// compute the same result.
#include "lower/contraction/ContractionTestUtil.h"

#include "passes/lower/GemmSchedule.h"
#include "passes/lower/LowerConv2D.h"
#include "passes/lower/LowerMatMul.h"

#include <fmt/format.h>

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;
using lower::GemmShape;
using lower::MatMulSchedule;
using Parallel = MatMulSchedule::Parallel;

namespace {

codegen::CpuTarget avx512Target() {
  codegen::CpuTarget target = codegen::referenceCpuTarget();
  target.vectorBits = 512;
  target.cores = 16;
  target.l1dBytes = 48 * 1024;
  target.l2Bytes = 2 << 20;
  target.l3Bytes = 32 << 20;
  return target;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Properties every default must have, whatever the heuristic's exact choice.
void checkSound(const MatMulSchedule &s, const GemmShape &shape, const codegen::CpuTarget &target) {
  INFO(fmt::format("mr={} nr={} vw={} mc={} nc={} kc={}", s.mr, s.nr, s.vectorWidth, s.mc, s.nc,
                   s.kc));
  CHECK(lower::checkGemmSchedule(s, shape));
  CHECK(s.vectorWidth == lower::accumulateLanes(shape.accumulate, target));
  int64_t vectors = s.nr / s.vectorWidth;
  // Accumulators, the B vectors and a broadcast fit the register file.
  CHECK(s.mr * vectors + vectors + 1 <= lower::vectorRegisters(target));
  // Blocks no larger than the problem rounded up to the tile.
  CHECK(s.mc <= ceilDiv(shape.m, s.mr) * s.mr);
  CHECK(s.nc <= ceilDiv(shape.n, s.nr) * s.nr);
  CHECK(s.kc <= std::max<int64_t>(shape.k, 1));
}

} // namespace

TEST_CASE("schedule: 2048^3 on AVX2 and AVX-512 uses every core",
          "[lower][contraction][schedule]") {
  GemmShape shape{1, 2048, 2048, 2048, DType::F32};
  for (const codegen::CpuTarget &target : {codegen::referenceCpuTarget(), avx512Target()}) {
    MatMulSchedule s = lower::defaultGemmSchedule(shape, target);
    checkSound(s, shape, target);
    CHECK(s.vectorWidth == target.f32Lanes());
    CHECK(s.packA);
    // Tasks for every core, in equal rounds: column panels (outer), or row blocks times
    // column chunks inside each (jc, pc) step (inner).
    REQUIRE(s.parallel != Parallel::Serial);
    int64_t tasks = ceilDiv(2048, s.nc);
    if (s.parallel == Parallel::Inner) {
      int64_t rowBlocks = ceilDiv(2048, s.mc);
      tasks = rowBlocks * lower::innerColumnChunks(rowBlocks, s.nc / s.nr, target.cores);
    }
    CHECK(tasks >= target.cores);
    CHECK(tasks % target.cores == 0);
    // A kc x nr strip of B takes at most a quarter of L2, the packed A block fits beside it.
    CHECK(s.kc * s.nr * 4 <= target.l2Bytes / 4);
    CHECK(s.kc >= 256);
    CHECK(s.mc * s.kc * 4 <= target.l2Bytes);
    // K is split into balanced blocks: the last is not a sliver.
    int64_t blocks = ceilDiv(2048, s.kc);
    CHECK(2048 - (blocks - 1) * s.kc >= s.kc / 2);
  }
}

TEST_CASE("schedule: register tiles follow the register file and the problem",
          "[lower][contraction][schedule]") {
  codegen::CpuTarget avx2 = codegen::referenceCpuTarget();
  codegen::CpuTarget avx512 = avx512Target();
  // Large: AVX2 fills 16 registers, AVX-512 32.
  MatMulSchedule big2 = lower::defaultGemmSchedule({1, 512, 512, 512, DType::F32}, avx2);
  MatMulSchedule big512 = lower::defaultGemmSchedule({1, 512, 512, 512, DType::F32}, avx512);
  CHECK(big2.mr * (big2.nr / 8) >= 12);
  CHECK(big512.mr * (big512.nr / 16) >= 20);
  // N = 10 (Dense(10)): one vector of columns, more rows.
  MatMulSchedule narrow = lower::defaultGemmSchedule({1, 64, 10, 64, DType::F32}, avx2);
  // Ten columns waste as much in one 8-lane strip pair as in one 16-wide tile; the wider tile
  // loads less per multiply-add.
  CHECK(narrow.nr == 16);
  // M = 1 (a matrix-vector product): at most one padded row. (One row alone has too few
  // independent accumulators to hide the multiply-add latency; two rows, one of them
  // padding, run the useful one as fast.)
  MatMulSchedule row = lower::defaultGemmSchedule({1, 1, 1000, 128, DType::F32}, avx2);
  CHECK(row.mr <= 2);
  // f64 halves the lanes; i32 keeps them; i64 halves them.
  CHECK(lower::defaultGemmSchedule({1, 64, 64, 64, DType::F64}, avx2).vectorWidth == 4);
  CHECK(lower::defaultGemmSchedule({1, 64, 64, 64, DType::I32}, avx2).vectorWidth == 8);
  CHECK(lower::defaultGemmSchedule({1, 64, 64, 64, DType::I64}, avx512).vectorWidth == 8);
  for (GemmShape shape :
       {GemmShape{1, 64, 10, 64, DType::F32}, GemmShape{1, 1, 1000, 128, DType::F32},
        GemmShape{3, 7, 5, 3, DType::F64}, GemmShape{1, 33, 65, 17, DType::I32}})
    for (const codegen::CpuTarget &target : {avx2, avx512})
      checkSound(lower::defaultGemmSchedule(shape, target), shape, target);
}


TEST_CASE("schedule: Direct's short reductions leave vector registers free",
          "[lower][contraction][schedule]") {
  codegen::CpuTarget avx2 = codegen::referenceCpuTarget();
  // VGG16's conv1_1 as nhwc Direct: 50176 pixels x 64 channels, K = 27, A read in place.
  GemmShape conv1{1, 50176, 64, 27, DType::F32};
  conv1.aInPlace = true;
  MatMulSchedule shortK = lower::defaultGemmSchedule(conv1, avx2);
  int64_t vectors = shortK.nr / shortK.vectorWidth;
  CHECK(shortK.mr * vectors + vectors + 1 <= 13);
  CHECK(64 % shortK.nr == 0); // and, with the registers it has, wastes no columns
  // The same tile over a packed A, or over a long reduction, fills the register file.
  for (GemmShape shape : {GemmShape{1, 50176, 64, 27, DType::F32}, [] {
                            GemmShape longK{1, 3136, 256, 2304, DType::F32};
                            longK.aInPlace = true;
                            return longK;
                          }()}) {
    MatMulSchedule s = lower::defaultGemmSchedule(shape, avx2);
    int64_t v = s.nr / s.vectorWidth;
    CHECK(s.mr * v + v + 1 == 16);
  }
}
TEST_CASE("schedule: a ragged last column panel sends the work to row blocks",
          "[lower][contraction][schedule]") {
  codegen::CpuTarget target = avx512Target();
  target.cores = 2;
  // VGG16's 14x14x512 conv as an im2col GEMM: 196 columns would split into panels of
  // 144 and 52, one core idle for almost half the kernel; the rows split evenly instead.
  GemmShape ragged{1, 512, 196, 4608, DType::F32};
  MatMulSchedule s = lower::defaultGemmSchedule(ragged, target);
  INFO(fmt::format("mr={} nr={} mc={} nc={}", s.mr, s.nr, s.mc, s.nc));
  CHECK(s.parallel == Parallel::Inner);
  checkSound(s, ragged, target);
  // Columns that divide evenly keep per-task panels.
  GemmShape even{1, 512, 256, 4608, DType::F32};
  MatMulSchedule e = lower::defaultGemmSchedule(even, target);
  INFO(fmt::format("even: mr={} nr={} mc={} nc={}", e.mr, e.nr, e.mc, e.nc));
  CHECK(e.parallel == Parallel::Outer);
  CHECK(256 % e.nc == 0);
  CHECK(256 / e.nc == target.cores);
}

TEST_CASE("schedule: parallel mode from the problem's shape", "[lower][contraction][schedule]") {
  codegen::CpuTarget target = codegen::referenceCpuTarget(); // 8 cores
  // Tiny: one thread.
  CHECK(lower::defaultGemmSchedule({1, 8, 8, 8, DType::F32}, target).parallel == Parallel::Serial);
  // Many images of a small conv (nchw im2col batch): a task per image.
  MatMulSchedule perImage = lower::defaultGemmSchedule({64, 32, 676, 9, DType::F32}, target);
  CHECK(perImage.parallel == Parallel::Outer);
  // One wide matrix with few rows: column panels in parallel.
  MatMulSchedule wide = lower::defaultGemmSchedule({1, 64, 50176, 27, DType::F32}, target);
  CHECK(wide.parallel == Parallel::Outer);
  CHECK(ceilDiv(50176, wide.nc) >= target.cores);
  // Outer tasks pack their own B panel: a core's share of L3.
  CHECK(wide.kc * wide.nc * 4 <= target.l3Bytes / target.cores);
  // A tall single matrix: row blocks in parallel.
  MatMulSchedule tall = lower::defaultGemmSchedule({1, 43264, 32, 9, DType::F32}, target);
  CHECK(tall.parallel == Parallel::Inner);
  int64_t rowBlocks = ceilDiv(43264, tall.mc);
  CHECK(rowBlocks * lower::innerColumnChunks(rowBlocks, tall.nc / tall.nr, target.cores) >=
        target.cores);
}

TEST_CASE("schedule: column chunks balance the row blocks over the cores",
          "[lower][contraction][schedule]") {
  CHECK(lower::innerColumnChunks(16, 8, 16) == 1);  // one round already
  CHECK(lower::innerColumnChunks(1, 16, 16) == 16); // a single row block: split the columns
  CHECK(lower::innerColumnChunks(4, 8, 16) == 4);   // 4 x 4 = 16 tasks
  CHECK(lower::innerColumnChunks(3, 1, 16) == 1);   // nothing to split
  CHECK(lower::innerColumnChunks(5, 8, 1) == 1);    // one core
}

TEST_CASE("schedule: illegal schedules are errors naming the field",
          "[lower][contraction][schedule]") {
  GemmShape shape{1, 100, 100, 100, DType::F32};
  auto message = [&](MatMulSchedule s) {
    auto checked = lower::checkGemmSchedule(s, shape);
    REQUIRE_FALSE(checked);
    return checked.error().message();
  };
  MatMulSchedule base = lower::defaultGemmSchedule(shape, codegen::referenceCpuTarget());
  MatMulSchedule s = base;
  s.nr = s.vectorWidth + 1;
  CHECK_THAT(message(s), Catch::Contains("nr = 9 must be a positive multiple of vectorWidth = 8"));
  s = base;
  s.vectorWidth = 6;
  CHECK_THAT(message(s), Catch::Contains("vectorWidth = 6 must be a power of two"));
  s = base;
  s.mc = s.mr + 1;
  CHECK_THAT(message(s), Catch::Contains("must be a positive multiple of mr"));
  s = base;
  s.nc = s.nr + 1;
  CHECK_THAT(message(s), Catch::Contains("must be a positive multiple of nr"));
  s = base;
  s.kc = 0;
  CHECK_THAT(message(s), Catch::Contains("kc = 0 must be at least 1"));
  s = base;
  s.packB = false;
  CHECK_THAT(message(s), Catch::Contains("packB = false is not supported"));
  s = base;
  s.mr = 20;
  s.nr = 32;
  s.mc = 20;
  CHECK_THAT(message(s), Catch::Contains("register tile needs 80 vectors"));
  s = base;
  s.parallel = Parallel::Outer;
  s.kc = 4096;
  s.nc = (1040 / s.nr + 1) * s.nr; // 16 MiB of f32 and more
  auto wideOuter = lower::checkGemmSchedule(s, GemmShape{1, 100, 4000, 4096, DType::F32});
  REQUIRE_FALSE(wideOuter);
  CHECK_THAT(wideOuter.error().message(), Catch::Contains("B panel per task"));
  CHECK(lower::checkGemmSchedule(s, GemmShape{1, 100, 100, 4096, DType::F32})); // nc clamped
  s = base;
  s.packA = true;
  s.kc = 8192;
  s.mc = (520 / s.mr + 1) * s.mr;
  auto bigK = lower::checkGemmSchedule(s, GemmShape{1, 1000, 100, 8192, DType::F32});
  REQUIRE_FALSE(bigK);
  CHECK_THAT(bigK.error().message(), Catch::Contains("packed A block"));
  // Blocks beyond the problem are clamped, not rejected.
  s = base;
  s.mc = 96 * 100;
  s.nc = s.nr * 1000;
  CHECK(lower::checkGemmSchedule(s, GemmShape{1, 5, 5, 5, DType::F32}));
}

TEST_CASE("schedule: lowering reports an illegal or mismatched schedule",
          "[lower][contraction][schedule]") {
  GraphCase c;
  ir::Value *x = c.input("x", DType::F32, {8, 8});
  ir::Value *w = c.input("w", DType::F32, {8, 8});
  c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs()));
  PlannedContraction planned = planContraction(c.graph());
  MatMulSchedule bad;
  bad.nr = 12;
  bad.vectorWidth = 8;
  auto lowered = lower::lowerContractionForCpu(c.graph(), *planned.group, bad, hostTarget());
  REQUIRE_FALSE(lowered);
  CHECK_THAT(lowered.error().message(), Catch::Contains("nr = 12"));
  // Zero sizes are reported before anything divides by them.
  MatMulSchedule zero;
  zero.mc = 0;
  auto zeroMc = lower::lowerContractionForCpu(c.graph(), *planned.group, zero, hostTarget());
  REQUIRE_FALSE(zeroMc);
  CHECK_THAT(zeroMc.error().message(), Catch::Contains("mc = 0"));
  zero = MatMulSchedule{};
  zero.vectorWidth = 0;
  auto zeroWidth = lower::lowerContractionForCpu(c.graph(), *planned.group, zero, hostTarget());
  REQUIRE_FALSE(zeroWidth);
  CHECK_THAT(zeroWidth.error().message(), Catch::Contains("vectorWidth = 0"));
  auto mismatched = lower::lowerContractionForCpu(c.graph(), *planned.group,
                                                  lower::PointwiseSchedule{}, hostTarget());
  REQUIRE_FALSE(mismatched);
  CHECK_THAT(mismatched.error().message(), Catch::Contains("matmul needs a MatMulSchedule"));
  // A conv2d schedule does not apply to a matmul either; the error names the group and target.
  auto convOnMatmul = lower::lowerContractionForCpu(c.graph(), *planned.group,
                                                    lower::Conv2DSchedule{}, hostTarget());
  REQUIRE_FALSE(convOnMatmul);
  CHECK(convOnMatmul.error().code() == ErrorCode::InvalidArgument);
  CHECK_THAT(convOnMatmul.error().message(),
             Catch::Contains(fmt::format("group {} (", planned.group->id)) &&
                 Catch::Contains("a CPU matmul needs a MatMulSchedule, got conv2d"));
}

TEST_CASE("schedule: the default is legal on hosts with a huge shared L3",
          "[lower][contraction][schedule]") {
  // A server reports hundreds of MiB of L3 to a 2-core VM; the B panel must still respect the
  // per-task buffer bound (VGG's 224x224 layers once failed to compile here).
  for (int64_t l3 : {int64_t(260) << 20, int64_t(1) << 30})
    for (int cores : {2, 16}) {
      codegen::CpuTarget target = avx512Target();
      target.l3Bytes = l3;
      target.cores = cores;
      for (GemmShape shape :
           {GemmShape{1, 64, 50176, 576, DType::F32}, GemmShape{1, 50176, 64, 576, DType::F32},
            GemmShape{1, 4096, 4096, 4096, DType::F32}, GemmShape{8, 512, 784, 4608, DType::F64}}) {
        INFO(fmt::format("l3={} cores={} m={} n={} k={}", l3, cores, shape.m, shape.n, shape.k));
        checkSound(lower::defaultGemmSchedule(shape, target), shape, target);
        for (const MatMulSchedule &s : lower::gemmScheduleSpace(shape, target, true))
          CHECK(lower::checkGemmSchedule(s, shape));
      }
    }
}

TEST_CASE("schedule: the space is legal, starts with the default and has no duplicates",
          "[lower][contraction][schedule]") {
  for (const codegen::CpuTarget &target : {codegen::referenceCpuTarget(), avx512Target()})
    for (GemmShape shape :
         {GemmShape{1, 2048, 2048, 2048, DType::F32}, GemmShape{64, 32, 676, 9, DType::F32},
          GemmShape{1, 7, 5, 3, DType::F64}, GemmShape{4, 100, 33, 257, DType::I32}}) {
      std::vector<MatMulSchedule> space = lower::gemmScheduleSpace(shape, target, true);
      REQUIRE(space.size() >= 2);
      MatMulSchedule d = lower::clampGemmSchedule(lower::defaultGemmSchedule(shape, target), shape);
      CHECK(space.front().mr == d.mr);
      CHECK(space.front().nr == d.nr);
      CHECK(space.front().kc == d.kc);
      CHECK(space.front().parallel == d.parallel);
      bool sawUnpacked = false, sawOtherParallel = false;
      for (size_t i = 0; i < space.size(); ++i) {
        CHECK(lower::checkGemmSchedule(space[i], shape));
        sawUnpacked |= !space[i].packA;
        sawOtherParallel |= space[i].parallel != d.parallel;
        for (size_t j = 0; j < i; ++j) {
          const MatMulSchedule &a = space[i], &b = space[j];
          bool same = a.mr == b.mr && a.nr == b.nr && a.mc == b.mc && a.nc == b.nc &&
                      a.kc == b.kc && a.packA == b.packA && a.parallel == b.parallel;
          CHECK_FALSE(same);
        }
      }
      CHECK(sawUnpacked);
      CHECK(sawOtherParallel);
    }
}

TEST_CASE("schedule: every schedule in the space computes the same result",
          "[lower][contraction][schedule]") {
  // A matmul with bias and relu, and a conv in each layout.
  std::vector<std::unique_ptr<GraphCase>> cases;
  {
    auto c = std::make_unique<GraphCase>(21);
    ir::Value *x = c->input("x", DType::F32, {2, 37, 45});
    ir::Value *w = c->input("w", DType::F32, {45, 29});
    ir::Value *bias = c->input("bias", DType::F32, {29});
    ir::Value *mm = c->node(OpKind::MatMul, {x, w}, matmulAttrs());
    c->output(c->node(OpKind::Relu, {c->node(OpKind::Add, {mm, bias})}));
    cases.push_back(std::move(c));
  }
  for (const char *layout : {"nchw", "nhwc"}) {
    auto c = std::make_unique<GraphCase>(22);
    bool nhwc = std::string(layout) == "nhwc";
    ConvParams p;
    p.layout = layout;
    p.padding = {1, 1, 1, 1};
    ir::Value *x =
        c->input("x", DType::F32,
                 nhwc ? std::vector<int64_t>{3, 11, 9, 5} : std::vector<int64_t>{3, 5, 11, 9});
    ir::Value *w =
        c->input("w", DType::F32,
                 nhwc ? std::vector<int64_t>{13, 3, 3, 5} : std::vector<int64_t>{13, 5, 3, 3});
    c->output(c->node(OpKind::Relu, {c->node(OpKind::Conv2D, {x, w}, p.attrs())}));
    cases.push_back(std::move(c));
  }
  std::vector<int64_t> reductions = {45, 45, 45};
  for (size_t i = 0; i < cases.size(); ++i) {
    PlannedContraction planned = planContraction(cases[i]->graph());
    std::vector<lower::Schedule> space =
        lower::contractionScheduleSpace(cases[i]->graph(), *planned.group, hostTarget());
    REQUIRE(space.size() >= 4);
    for (const lower::Schedule &s : space)
      checkContraction(*cases[i], reductions[i], DType::F32, Runner::Jit, s);
  }
}

TEST_CASE("schedule: the CNN's conv layers give every core work", "[lower][contraction][schedule]") {
  codegen::CpuTarget target = avx512Target(); // 16 cores
  for (const char *layout : {"nchw", "nhwc"}) {
    bool nhwc = std::string(layout) == "nhwc";
    struct Layer {
      int64_t channels, size, out;
    };
    for (Layer layer : {Layer{1, 28, 32}, Layer{32, 13, 64}, Layer{64, 5, 64}}) {
      INFO(fmt::format("{} {}x{}x{} -> {}", layout, layer.size, layer.size, layer.channels,
                       layer.out));
      GraphCase c;
      int64_t images = 64;
      ir::Value *x = c.input("x", DType::F32,
                             nhwc ? std::vector<int64_t>{images, layer.size, layer.size,
                                                         layer.channels}
                                  : std::vector<int64_t>{images, layer.channels, layer.size,
                                                         layer.size});
      ir::Value *w = c.input("w", DType::F32,
                             nhwc ? std::vector<int64_t>{layer.out, 3, 3, layer.channels}
                                  : std::vector<int64_t>{layer.out, layer.channels, 3, 3});
      ConvParams p;
      p.layout = layout;
      const ir::Node &conv = *c.node(OpKind::Conv2D, {x, w}, p.attrs())->definingNode();
      lower::Conv2DSchedule s = lower::defaultConv2DSchedule(conv, target);
      GemmShape shape = lower::conv2DGemmShape(conv, s.algorithm);
      MatMulSchedule g = lower::clampGemmSchedule(s.gemm, shape);
      REQUIRE(g.parallel != Parallel::Serial);
      int64_t tasks = shape.batch * ceilDiv(shape.n, g.nc);
      if (g.parallel == Parallel::Inner) {
        int64_t rowBlocks = ceilDiv(shape.m, g.mc);
        tasks = rowBlocks * lower::innerColumnChunks(rowBlocks, g.nc / g.nr, target.cores);
      }
      CHECK(tasks >= target.cores);
    }
  }
}
