// conv2d lowering against the reference interpreter on every lowering target: both layouts,
// padding, stride, dilation, groups (depthwise ones are pooling groups: PoolingLoweringTest.cpp)
// and a channel multiplier, 1x1 / 3x3 / 5x5 windows, odd spatial sizes,
// narrow, wide and integer dtypes and the CNN's layers; on the CPU with both algorithms (im2col
// implicit GEMM, direct), on the simulator with the default and small single- and
// double-buffered tiles.
#include "lower/contraction/ContractionTargets.h"

#include "passes/lower/GemmSchedule.h"
#include "passes/lower/LowerConv2D.h"
#include "ir/kernel/Printer.h"

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;
using Algorithm = lower::Conv2DSchedule::Algorithm;

namespace {

struct ConvCase {
  int64_t images, channels, height, width, outChannels, kernelH, kernelW;
  ConvParams params;
  std::string what;
};

/// An image [N, C, H, W] or filter [O, I/g, KH, KW] shape in the layout's axis order: nhwc
/// moves axis 1 last ([N, H, W, C], [O, KH, KW, I/g]).
std::vector<int64_t> inLayout(bool nhwc, std::vector<int64_t> nchw) {
  if (nhwc)
    std::rotate(nchw.begin() + 1, nchw.begin() + 2, nchw.end());
  return nchw;
}

/// The default GEMM schedule of `algorithm` for the conv node.
lower::Conv2DSchedule scheduleFor(const ir::Node &conv, Algorithm algorithm) {
  lower::Conv2DSchedule s;
  s.algorithm = algorithm;
  s.gemm = lower::defaultGemmSchedule(lower::conv2DGemmShape(conv, algorithm), hostTarget());
  if (algorithm == Algorithm::Direct)
    s.gemm.packA = false;
  s.ocBlock = s.gemm.nr;
  return s;
}

/// Builds the conv (plus `bias` + relu when asked) and checks it on every target; the CPU runs
/// both algorithms through `cpuRunners`, the simulator `simTiles` besides its default.
void checkConv(const ConvCase &cc, std::vector<Runner> cpuRunners, bool biasRelu = false,
               DType dtype = DType::F32, bool simTiles = true, bool filterParam = false) {
  bool nhwc = cc.params.layout == "nhwc";
  INFO(fmt::format("{}: {} input {}x{}x{}x{}, {} filters {}x{}, stride {}x{}, dilation {}x{}, "
                   "groups {}",
                   cc.what, cc.params.layout, cc.images, cc.channels, cc.height, cc.width,
                   cc.outChannels, cc.kernelH, cc.kernelW, cc.params.stride[0], cc.params.stride[1],
                   cc.params.dilation[0], cc.params.dilation[1], cc.params.groups));
  GraphCase c(3);
  int64_t groupChannels = cc.channels / cc.params.groups;
  ir::Value *x =
      c.input("x", dtype, inLayout(nhwc, {cc.images, cc.channels, cc.height, cc.width}));
  ir::Value *w = c.operand(
      "w", dtype, inLayout(nhwc, {cc.outChannels, groupChannels, cc.kernelH, cc.kernelW}),
      filterParam);
  ConvParams p = cc.params;
  ir::Value *conv = c.node(OpKind::Conv2D, {x, w}, p.attrs());
  ir::Value *out = conv;
  if (biasRelu) {
    ir::Value *bias = c.input("bias", dtype,
                              nhwc ? std::vector<int64_t>{cc.outChannels}
                                   : std::vector<int64_t>{cc.outChannels, 1, 1});
    out = c.node(OpKind::Relu, {c.node(OpKind::Add, {conv, bias})});
  }
  c.output(out);
  int64_t k = groupChannels * cc.kernelH * cc.kernelW;
  const ir::Node &node = *conv->definingNode();
  TargetSchedules schedules{
      .cpu = {scheduleFor(node, Algorithm::Im2col), scheduleFor(node, Algorithm::Direct)},
      .sim = {std::nullopt},
      .cpuRunners = std::move(cpuRunners)};
  if (filterParam) // the GPU templates read a parameter filter as any other operand
    schedules.sim.clear();
  if (simTiles) {
    schedules.sim.push_back(lower::GpuConv2DSchedule{gpuGemm(32, 32, 8, 2, 2, 2)});
    schedules.sim.push_back(lower::GpuConv2DSchedule{gpuGemm(64, 32, 16, 4, 2, 1)});
  }
  checkOnTargets(c, k, p.accumulate, schedules);
}

ConvParams params(std::string layout, std::vector<int64_t> stride = {1, 1},
                  std::vector<int64_t> padding = {0, 0, 0, 0},
                  std::vector<int64_t> dilation = {1, 1}, int64_t groups = 1) {
  ConvParams p;
  p.layout = std::move(layout);
  p.stride = std::move(stride);
  p.padding = std::move(padding);
  p.dilation = std::move(dilation);
  p.groups = groups;
  return p;
}

} // namespace

TEST_CASE("conv2d: windows, padding, stride, dilation and groups in both layouts",
          "[lower][contraction][conv2d]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (std::string layout : {"nchw", "nhwc"}) {
    std::vector<ConvCase> cases = {
        {2, 3, 9, 11, 5, 1, 1, params(layout), "1x1"},
        {2, 3, 9, 11, 5, 1, 1, params(layout, {2, 2}), "1x1 stride 2"},
        {2, 4, 9, 11, 7, 3, 3, params(layout), "3x3 valid"},
        {1, 4, 10, 9, 6, 3, 3, params(layout, {1, 1}, {1, 1, 1, 1}), "3x3 same padding"},
        {2, 3, 11, 13, 5, 3, 3, params(layout, {1, 1}, {0, 2, 1, 0}), "asymmetric padding"},
        {2, 3, 11, 12, 6, 3, 3, params(layout, {2, 2}, {1, 1, 1, 1}), "stride 2"},
        {1, 3, 13, 11, 4, 3, 2, params(layout, {2, 1}, {1, 0, 0, 1}), "stride 2x1, 3x2 window"},
        {2, 2, 12, 13, 5, 3, 3, params(layout, {1, 1}, {2, 2, 2, 2}, {2, 2}), "dilation 2"},
        {1, 3, 13, 11, 4, 5, 5, params(layout, {1, 1}, {2, 2, 2, 2}), "5x5"},
        {2, 6, 9, 7, 8, 3, 3, params(layout, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2), "groups 2"},
        {1, 4, 9, 7, 8, 3, 3, params(layout, {2, 2}, {1, 1, 1, 1}, {1, 1}, 4),
         "depthwise, multiplier 2, stride 2"},
        {1, 1, 7, 5, 3, 7, 5, params(layout), "window as large as the input"},
        {3, 1, 13, 13, 4, 3, 3, params(layout, {1, 1}, {3, 3, 3, 3}), "padding wider than a tap"},
        {2, 8, 6, 6, 16, 1, 1, params(layout), "1x1 with aligned channels (vector filter loads)"},
    };
    for (const ConvCase &cc : cases) {
      checkConv(cc, {Runner::Jit, Runner::Evaluator});
      checkConv(cc, {Runner::Jit}, /*biasRelu=*/true);
      // The filter a parameter: the CPU packs it in a prelude (Direct, and nhwc's Im2col),
      // every access checked by the evaluator where the filter has several group matrices.
      std::vector<Runner> runners{Runner::Jit};
      if (cc.params.groups > 1)
        runners.push_back(Runner::Evaluator);
      checkConv(cc, runners, false, DType::F32, /*simTiles=*/false, /*filterParam=*/true);
    }
  }
}

TEST_CASE("conv2d: direct reads each tap's channel run in K blocks that split or hold runs",
          "[lower][contraction][conv2d]") {
  // 40 channels a tap, K = 360: kc 20 and 40 split or equal a run, 80 holds two (the last block
  // a shorter remainder), 50 neither (the micro-kernel's k loop stays whole). nhwc reads a row
  // of 3 taps (120) as one run where kc holds whole rows: 120, 240 (the last block one row)
  // and 360. Padding on every side, an odd pixel count (63, not a multiple of mr) and 2 images,
  // so tiles straddle rows, images and the padding.
  for (std::string layout : {"nchw", "nhwc"}) {
    bool nhwc = layout == "nhwc";
    GraphCase c(3);
    ir::Value *x = c.input("x", DType::F32, inLayout(nhwc, {2, 40, 9, 7}));
    ir::Value *w = c.input("w", DType::F32, inLayout(nhwc, {24, 40, 3, 3}));
    ir::Value *conv = c.node(OpKind::Conv2D, {x, w}, params(layout, {1, 1}, {1, 1, 1, 1}).attrs());
    c.output(conv);
    TargetSchedules schedules{.cpu = {}, .sim = {}, .cpuRunners = {Runner::Jit, Runner::Evaluator}};
    for (int64_t kc : {20, 40, 50, 80, 120, 240, 360}) {
      lower::Conv2DSchedule s = scheduleFor(*conv->definingNode(), Algorithm::Direct);
      s.gemm.kc = kc;
      schedules.cpu.push_back(s);
    }
    INFO(layout);
    checkOnTargets(c, 360, DType::F32, schedules);
  }
}

TEST_CASE("conv2d: nhwc Direct reads a row of taps as one run, with no padding test inside",
          "[lower][contraction][conv2d]") {
  // 3 channels, 3x3, padding 1 (VGG16's conv1_1 in small): a row of taps is 9 contiguous
  // elements, so a tile inside the image runs k loops of 9, and only border tiles test the
  // padding (their rows cross it) with predicated loads in runs of 3. Grouped or dilated
  // windows keep one run per tap: their rows of taps are not contiguous.
  auto kernelText = [](std::vector<int64_t> dilation, int64_t groups) {
    GraphCase c(3);
    ir::Value *x = c.input("x", DType::F32, {1, 10, 11, 3 * groups});
    ir::Value *w = c.param("w", DType::F32, {16, 3, 3, 3});
    ConvParams p = params("nhwc", {1, 1}, {1, 1, 1, 1}, dilation, groups);
    p.padding = {dilation[0], dilation[0], dilation[1], dilation[1]};
    ir::Value *conv = c.node(OpKind::Conv2D, {x, w}, p.attrs());
    c.output(conv);
    PlannedContraction planned = planContraction(c.graph());
    lower::Conv2DSchedule s = scheduleFor(*conv->definingNode(), Algorithm::Direct);
    auto lowered = lower::lowerContractionForCpu(c.graph(), *planned.group, s, hostTarget());
    REQUIRE(lowered);
    return kir::printKernel(lowered->kernel);
  };
  std::string rows = kernelText({1, 1}, 1);
  CHECK_THAT(rows, Catch::Contains("for conv_k in [0, 9) serial"));
  CHECK_THAT(rows, Catch::Contains("for conv_kp in [0, 3) serial")); // border rows, tap by tap
  for (std::string text : {kernelText({2, 2}, 1), kernelText({1, 1}, 2)}) {
    CHECK_THAT(text, Catch::Contains("for conv_k in [0, 3) serial"));
    CHECK_THAT(text, !Catch::Contains("for conv_k in [0, 9) serial"));
  }
}

TEST_CASE("conv2d: a parameter filter is packed once, in a prelude, where it is the B operand",
          "[lower][contraction][conv2d]") {
  for (std::string layout : {"nchw", "nhwc"}) {
    bool nhwc = layout == "nhwc";
    GraphCase c(3);
    ir::Value *x = c.input("x", DType::F32, inLayout(nhwc, {2, 6, 9, 7}));
    ir::Value *w =
        c.param("w", DType::F32, {16, 3, 3, 3}); // [O, KH, KW, I/g] and [O, I/g, KH, KW] alike
    ir::Value *conv =
        c.node(OpKind::Conv2D, {x, w}, params(layout, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2).attrs());
    c.output(conv);
    PlannedContraction planned = planContraction(c.graph());
    for (Algorithm algorithm : {Algorithm::Im2col, Algorithm::Direct}) {
      INFO(layout << (algorithm == Algorithm::Direct ? " direct" : " im2col"));
      lower::Conv2DSchedule s = scheduleFor(*conv->definingNode(), algorithm);
      auto lowered = lower::lowerContractionForCpu(c.graph(), *planned.group, s, hostTarget());
      REQUIRE(lowered);
      // nchw Im2col multiplies filter x window: the filter is A, read in place.
      bool filterIsB = nhwc || algorithm == Algorithm::Direct;
      REQUIRE(lowered->prelude.has_value() == filterIsB);
      if (filterIsB) {
        CHECK(lowered->preludeInput == 1);
        CHECK(lowered->preludeWorkspace == 0);
      }
    }
  }
}

TEST_CASE("conv2d: the CNN's layers with bias and relu", "[lower][contraction][conv2d]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (std::string layout : {"nchw", "nhwc"}) {
    std::vector<ConvCase> cases = {
        {2, 1, 28, 28, 32, 3, 3, params(layout), "Conv2D(32, 3x3) on 28x28x1"},
        {2, 32, 13, 13, 64, 3, 3, params(layout), "Conv2D(64, 3x3) on 13x13x32"},
        {3, 64, 5, 5, 64, 3, 3, params(layout), "Conv2D(64, 3x3) on 5x5x64"},
    };
    for (const ConvCase &cc : cases) // the simulator's default only: these are its largest
      checkConv(cc, {Runner::Jit}, /*biasRelu=*/true, DType::F32, /*simTiles=*/false);
  }
}

TEST_CASE("conv2d: narrow and wide float dtypes", "[lower][contraction][conv2d]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (std::string layout : {"nchw", "nhwc"})
    for (DType dtype : {DType::F16, DType::BF16, DType::F64}) {
      ConvCase cc{2, 4, 9, 8, 6, 3, 3, params(layout, {1, 1}, {1, 1, 1, 1}), "dtype"};
      cc.params.accumulate = dtype == DType::F64 ? DType::F64 : DType::F32;
      checkConv(cc, {Runner::Jit}, /*biasRelu=*/true, dtype);
    }
}

TEST_CASE("conv2d: integer operands", "[lower][contraction][conv2d]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (std::string layout : {"nchw", "nhwc"}) {
    ConvCase cc{2, 3, 7, 9, 5, 3, 3, params(layout, {2, 1}, {1, 1, 0, 2}), "i8"};
    cc.params.accumulate = DType::I32;
    checkConv(cc, {Runner::Jit, Runner::Evaluator}, false, DType::I8);
  }
}

TEST_CASE("conv2d: the heuristic runs convolutions with enough output channels directly",
          "[lower][contraction][conv2d]") {
  GraphCase c;
  ir::Value *x = c.input("x", DType::F32, {1, 16, 28, 28});
  ir::Value *w1 = c.input("w1", DType::F32, {32, 16, 3, 3});
  ir::Value *conv1 = c.node(OpKind::Conv2D, {x, w1}, params("nchw").attrs());
  lower::Conv2DSchedule first = lower::defaultConv2DSchedule(*conv1->definingNode(), hostTarget());
  CHECK(first.algorithm == Algorithm::Direct);
  CHECK_FALSE(first.gemm.packA);
  CHECK(first.ocBlock % first.gemm.vectorWidth == 0);

  ir::Value *y = c.input("y", DType::F32, {1, 32, 13, 13});
  ir::Value *w2 = c.input("w2", DType::F32, {64, 32, 3, 3});
  ir::Value *conv2 = c.node(OpKind::Conv2D, {y, w2}, params("nchw").attrs());
  CHECK(lower::defaultConv2DSchedule(*conv2->definingNode(), hostTarget()).algorithm ==
        Algorithm::Direct);

  // Two output channels per group (a depthwise multiplier of 2) would leave the vector axis
  // nearly empty.
  ir::Value *wd = c.input("wd", DType::F32, {64, 1, 3, 3});
  ir::Value *grouped =
      c.node(OpKind::Conv2D, {y, wd}, params("nchw", {1, 1}, {1, 1, 1, 1}, {1, 1}, 32).attrs());
  lower::Conv2DSchedule third =
      lower::defaultConv2DSchedule(*grouped->definingNode(), hostTarget());
  CHECK(third.algorithm == Algorithm::Im2col);
  CHECK(third.gemm.packA);

  // A deep nchw reduction (VGG16's 28x28x256 -> 512: k = 2304) runs directly too, its K blocks
  // whole runs of a tap's 256 channels (one address and padding test per tap).
  ir::Value *deep = c.input("deep", DType::F32, {1, 256, 28, 28});
  ir::Value *wDeep = c.input("w_deep", DType::F32, {64, 256, 3, 3});
  ir::Value *deepConv =
      c.node(OpKind::Conv2D, {deep, wDeep}, params("nchw", {1, 1}, {1, 1, 1, 1}).attrs());
  lower::Conv2DSchedule deepSchedule =
      lower::defaultConv2DSchedule(*deepConv->definingNode(), hostTarget());
  CHECK(deepSchedule.algorithm == Algorithm::Direct);
  CHECK(deepSchedule.gemm.kc % 256 == 0);
  // A tap's 1536 channels over a kc below that (the default kc is at most 1024): kc divides
  // the run.
  ir::Value *wide = c.input("wide", DType::F32, {1, 1536, 14, 14});
  ir::Value *wWide = c.input("w_wide", DType::F32, {64, 1536, 3, 3});
  ir::Value *wideConv =
      c.node(OpKind::Conv2D, {wide, wWide}, params("nchw", {1, 1}, {1, 1, 1, 1}).attrs());
  lower::Conv2DSchedule wideSchedule =
      lower::defaultConv2DSchedule(*wideConv->definingNode(), hostTarget());
  CHECK(wideSchedule.algorithm == Algorithm::Direct);
  CHECK(wideSchedule.gemm.kc < 1536);
  CHECK(1536 % wideSchedule.gemm.kc == 0);

  // K blocks of whole runs split K evenly: ResNet-50's 28x28 3x3 layer (K = 1152, 9 runs of
  // 128) in two blocks of 5 and 4 runs, not 4 + 4 + 1.
  ir::Value *mid = c.input("mid", DType::F32, {1, 28, 28, 128});
  ir::Value *wMid = c.input("w_mid", DType::F32, {128, 3, 3, 128});
  ir::Value *midConv =
      c.node(OpKind::Conv2D, {mid, wMid}, params("nhwc", {1, 1}, {1, 1, 1, 1}).attrs());
  lower::Conv2DSchedule midSchedule =
      lower::defaultConv2DSchedule(*midConv->definingNode(), codegen::referenceCpuTarget());
  REQUIRE(midSchedule.algorithm == Algorithm::Direct);
  int64_t kc = midSchedule.gemm.kc, tail = 1152 % kc;
  CHECK(kc % 128 == 0);
  CHECK((tail == 0 || tail >= kc - 128));
}

TEST_CASE("conv2d: the heuristic packs im2col panels for short reductions over images that fill "
          "the N axis",
          "[lower][contraction][conv2d]") {
  // The machine of the CPU benchmarks: two Zen 5 cores, AVX-512.
  codegen::CpuTarget target = codegen::referenceCpuTarget();
  target.vectorBits = 512;
  target.cores = 2;
  target.l2Bytes = 1 << 20;
  target.l3Bytes = 32 << 20;
  struct Layer {
    int64_t channels, size, out, kernel, stride, pad;
    const char *name;
  };
  for (Layer layer : {Layer{3, 224, 64, 3, 1, 1, "VGG16 conv1_1"},
                      Layer{64, 56, 256, 1, 1, 0, "ResNet-50 block 1 expand"},
                      Layer{3, 224, 64, 7, 2, 3, "ResNet-50 conv1"},
                      Layer{1024, 14, 256, 1, 1, 0, "ResNet-50 block 3 input"},
                      Layer{64, 224, 64, 3, 1, 1, "VGG16 conv1_2"}}) {
    for (int64_t images : {1, 16}) {
      INFO(fmt::format("{} at batch {}", layer.name, images));
      GraphCase c;
      ir::Value *x = c.input("x", DType::F32, {images, layer.channels, layer.size, layer.size});
      ir::Value *w =
          c.input("w", DType::F32, {layer.out, layer.channels, layer.kernel, layer.kernel});
      ConvParams p = params("nchw", {layer.stride, layer.stride},
                            {layer.pad, layer.pad, layer.pad, layer.pad});
      const ir::Node &conv = *c.node(OpKind::Conv2D, {x, w}, p.attrs())->definingNode();
      lower::Conv2DSchedule s = lower::defaultConv2DSchedule(conv, target);
      int64_t reduction = layer.channels * layer.kernel * layer.kernel;
      if (reduction > 8 * 16) {
        // A reduction long enough to amortize Direct's scattered write-out: read in place.
        CHECK(s.algorithm == Algorithm::Direct);
        CHECK_FALSE(s.gemm.packA);
        continue;
      }
      // A short one: im2col panels, whole vectors along the pixels.
      REQUIRE(s.algorithm == Algorithm::Im2col);
      CHECK(s.gemm.packA);
      lower::GemmShape shape = lower::conv2DGemmShape(conv, s.algorithm);
      lower::MatMulSchedule g = lower::clampGemmSchedule(s.gemm, shape);
      // Every core has work, and the packed A block stays in L2.
      REQUIRE(g.parallel == lower::MatMulSchedule::Parallel::Outer);
      CHECK(shape.batch * ((shape.n + g.nc - 1) / g.nc) >= target.cores);
      CHECK(g.mc * g.kc * 4 <= target.l2Bytes / 2);
    }
  }
}

TEST_CASE("conv2d: GEMM shapes of each layout and algorithm", "[lower][contraction][conv2d]") {
  GraphCase c;
  // 2 images, 6 channels in 2 groups, 9x7 -> 9x7 with padding 1, 10 filters.
  ir::Value *x = c.input("x", DType::F32, {2, 6, 9, 7});
  ir::Value *w = c.input("w", DType::F32, {10, 3, 3, 3});
  ir::Value *conv =
      c.node(OpKind::Conv2D, {x, w}, params("nchw", {1, 1}, {1, 1, 1, 1}, {1, 1}, 2).attrs());
  lower::GemmShape im2col = lower::conv2DGemmShape(*conv->definingNode(), Algorithm::Im2col);
  CHECK(im2col.batch == 4); // images x groups
  CHECK(im2col.m == 5);     // output channels per group
  CHECK(im2col.n == 63);    // output pixels
  CHECK(im2col.k == 27);    // 3 channels x 3 x 3
  lower::GemmShape direct = lower::conv2DGemmShape(*conv->definingNode(), Algorithm::Direct);
  CHECK(direct.batch == 2); // groups
  CHECK(direct.m == 126);   // pixels of both images
  CHECK(direct.n == 5);
  CHECK(direct.k == 27);

  ir::Value *xh = c.input("xh", DType::F32, {2, 9, 7, 6});
  ir::Value *wh = c.input("wh", DType::F32, {10, 3, 3, 3});
  ir::Value *convh =
      c.node(OpKind::Conv2D, {xh, wh}, params("nhwc", {1, 1}, {1, 1, 1, 1}, {1, 1}, 2).attrs());
  lower::GemmShape nhwc = lower::conv2DGemmShape(*convh->definingNode(), Algorithm::Im2col);
  CHECK(nhwc.batch == 2); // groups
  CHECK(nhwc.m == 126);   // pixels of both images
  CHECK(nhwc.n == 5);
  CHECK(nhwc.k == 27);
}
