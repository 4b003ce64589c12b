// nhwc conv2d as an implicit GEMM on tensor cores, on the SIMT simulator against the
// reference: the im2col rows arrive by async copies of a tap's channels (zeros in the padding),
// so windows, padding, stride, dilation and groups all go through the copy predicates.
#include "lower/gpu/contraction/GpuContractionTestUtil.h"

#include "passes/lower/gpu/GpuMmaSchedule.h"

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;

namespace {

struct ConvCase {
  int64_t images, channels, height, width, outChannels, kernelH, kernelW;
  std::vector<int64_t> stride{1, 1}, padding{0, 0, 0, 0}, dilation{1, 1};
  int64_t groups = 1;
  std::string what;
};

GraphCase convGraph(const ConvCase &cc, DType dtype, bool biasRelu, const std::string &layout) {
  GraphCase c(13);
  bool nhwc = layout == "nhwc";
  int64_t groupChannels = cc.channels / cc.groups;
  ir::Value *x = c.input("x", dtype,
                         nhwc ? std::vector<int64_t>{cc.images, cc.height, cc.width, cc.channels}
                              : std::vector<int64_t>{cc.images, cc.channels, cc.height, cc.width});
  ir::Value *w =
      c.input("w", dtype,
              nhwc ? std::vector<int64_t>{cc.outChannels, cc.kernelH, cc.kernelW, groupChannels}
                   : std::vector<int64_t>{cc.outChannels, groupChannels, cc.kernelH, cc.kernelW});
  ConvParams p;
  p.layout = layout;
  p.stride = cc.stride;
  p.padding = cc.padding;
  p.dilation = cc.dilation;
  p.groups = cc.groups;
  ir::AttrMap attrs = p.attrs();
  if (dtype == DType::F32)
    attrs["allow_tf32"] = true;
  ir::Value *out = c.node(OpKind::Conv2D, {x, w}, attrs);
  if (biasRelu) {
    ir::Value *bias = c.input("bias", dtype, {cc.outChannels});
    out = c.node(OpKind::Relu, {c.node(OpKind::Add, {out, bias})});
  }
  c.output(out);
  return c;
}

/// The conv with its default schedule (which must use tensor cores) and a small 3-stage one.
void checkMmaConv(const ConvCase &cc, DType dtype, bool biasRelu = false) {
  INFO(fmt::format("{}: {}x{}x{}x{} -> {} filters {}x{}, stride {}x{}, dilation {}x{}, groups {}, "
                   "{}",
                   cc.what, cc.images, cc.height, cc.width, cc.channels, cc.outChannels,
                   cc.kernelH, cc.kernelW, cc.stride[0], cc.stride[1], cc.dilation[0],
                   cc.dilation[1], cc.groups, dtypeName(dtype)));
  GraphCase c = convGraph(cc, dtype, biasRelu, "nhwc");
  int64_t k = cc.channels / cc.groups * cc.kernelH * cc.kernelW;
  double scale = dtype == DType::F32 ? kTf32Scale : 1.0;
  PlannedContraction planned = planContraction(c.graph());
  lower::Schedule chosen = lower::defaultSchedule(c.graph(), *planned.group, gpuTestTarget());
  INFO(lower::scheduleStr(chosen));
  REQUIRE(gemmOf(chosen).tensorCores());
  checkGpuContraction(c, k, DType::F32, chosen, scale);
  int vectorWidth = dtype == DType::F32 ? 4 : 8;
  checkGpuContraction(c, k, DType::F32,
                      lower::GpuConv2DSchedule{mmaTiles(32, 32, 16, 16, 16, 3, vectorWidth)},
                      scale);
}

} // namespace

TEST_CASE("gpu mma conv2d: which convolutions run on tensor cores",
          "[lower][gpu-contraction][mma]") {
  const codegen::GpuTarget &h100 = gpuTestTarget();
  auto shapeOf = [&](const ConvCase &cc, DType dtype, const std::string &layout) {
    GraphCase c = convGraph(cc, dtype, false, layout);
    return lower::gpuContractionGemmShape(*planContraction(c.graph()).group);
  };
  ConvCase cc{1, 16, 9, 9, 32, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, "3x3 same"};
  CHECK(lower::gpuMmaKindFor(shapeOf(cc, DType::BF16, "nhwc"), h100));
  CHECK(lower::gpuMmaKindFor(shapeOf(cc, DType::F32, "nhwc"), h100)); // allow_tf32
  // nchw's im2col rows are strided, not runs of channels.
  CHECK_FALSE(lower::gpuMmaKindFor(shapeOf(cc, DType::BF16, "nchw"), h100));
  // Three input channels (an RGB first layer) do not fill a 4-byte copy of 16-bit elements.
  ConvCase rgb{1, 3, 9, 9, 32, 3, 3, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, "rgb"};
  CHECK_FALSE(lower::gpuMmaKindFor(shapeOf(rgb, DType::BF16, "nhwc"), h100));
}

TEST_CASE("gpu mma conv2d: windows, padding, stride, dilation and groups",
          "[lower][gpu-contraction][mma]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  std::vector<ConvCase> cases = {
      {2, 8, 9, 11, 16, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, "1x1"},
      {2, 8, 9, 11, 16, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, "1x1 stride 2"},
      {2, 16, 9, 11, 24, 3, 3, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, "3x3 valid"},
      {1, 16, 10, 9, 16, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, "3x3 same padding"},
      {2, 8, 11, 13, 16, 3, 3, {1, 1}, {0, 2, 1, 0}, {1, 1}, 1, "asymmetric padding"},
      {2, 16, 11, 12, 32, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, "stride 2"},
      {2, 8, 12, 13, 16, 3, 3, {1, 1}, {2, 2, 2, 2}, {2, 2}, 1, "dilation 2"},
      {1, 4, 13, 11, 16, 5, 5, {1, 1}, {2, 2, 2, 2}, {1, 1}, 1, "5x5, 8-byte copies"},
      {2, 2, 9, 7, 16, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, "2 channels, 4-byte copies"},
      {2, 32, 9, 7, 32, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, "groups 2"},
      {3, 8, 13, 13, 16, 3, 3, {1, 1}, {3, 3, 3, 3}, {1, 1}, 1, "padding wider than a tap"},
  };
  for (const ConvCase &cc : cases)
    checkMmaConv(cc, DType::BF16, /*biasRelu=*/cc.groups == 1);
  for (const ConvCase &cc : {cases[3], cases[5], cases[9]}) {
    checkMmaConv(cc, DType::F16);
    checkMmaConv(cc, DType::F32);
  }
}

TEST_CASE("gpu mma conv2d: a ResNet layer", "[lower][gpu-contraction][mma]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  // 3x3, 64 -> 64 channels on 8x8 (two images): M = 128 pixels, N = 64, K = 576.
  checkMmaConv({2, 64, 8, 8, 64, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, "resnet 3x3"},
               DType::BF16, true);
}

TEST_CASE("gpu mma conv2d: split-K", "[lower][gpu-contraction][mma]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  // A late ResNet layer on one image: 7x7 pixels x 64 filters is 2 x 2 tiles of 32, K = 576
  // (36 tiles of 16) shared by 5 splits; grouped (2 groups ride on the batch axis with the
  // splits), with bias and relu after the sum.
  ConvCase late{1, 64, 7, 7, 64, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, "late resnet"};
  ConvCase grouped{2, 32, 7, 5, 32, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, "groups 2"};
  for (const ConvCase &cc : {late, grouped}) {
    GraphCase c = convGraph(cc, DType::BF16, /*biasRelu=*/cc.groups == 1, "nhwc");
    lower::GpuMatMulSchedule s = mmaTiles(32, 32, 16, 16, 16, 3);
    s.splitK = 5;
    INFO(cc.what);
    checkGpuContraction(c, cc.channels / cc.groups * 9, DType::F32, lower::GpuConv2DSchedule{s});
  }
}
