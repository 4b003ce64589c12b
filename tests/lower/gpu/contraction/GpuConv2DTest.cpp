// GPU conv2d lowering (implicit GEMM) on the SIMT simulator against the reference: both
// layouts, padding, stride, dilation, groups and depthwise, 1x1 / 3x3 / 5x5 windows, narrow
// and integer dtypes, bias + relu epilogues.
#include "lower/gpu/contraction/GpuContractionTestUtil.h"

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;

namespace {

struct ConvCase {
  int64_t images, channels, height, width, outChannels, kernelH, kernelW;
  ConvParams params;
  std::string what;
};

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

/// Builds the conv (plus bias + relu when asked) and checks it with the default schedule and
/// small double-buffered and single-buffered tiles.
void checkGpuConv(const ConvCase &cc, bool biasRelu = false, DType dtype = DType::F32) {
  bool nhwc = cc.params.layout == "nhwc";
  INFO(fmt::format("{}: {} input {}x{}x{}x{}, {} filters {}x{}, stride {}x{}, dilation {}x{}, "
                   "groups {}, {}",
                   cc.what, cc.params.layout, cc.images, cc.channels, cc.height, cc.width,
                   cc.outChannels, cc.kernelH, cc.kernelW, cc.params.stride[0],
                   cc.params.stride[1], cc.params.dilation[0], cc.params.dilation[1],
                   cc.params.groups, dtypeName(dtype)));
  GraphCase c(3);
  int64_t groupChannels = cc.channels / cc.params.groups;
  ir::Value *x = c.input("x", dtype,
                         nhwc ? std::vector<int64_t>{cc.images, cc.height, cc.width, cc.channels}
                              : std::vector<int64_t>{cc.images, cc.channels, cc.height, cc.width});
  ir::Value *w =
      c.input("w", dtype,
              nhwc ? std::vector<int64_t>{cc.outChannels, cc.kernelH, cc.kernelW, groupChannels}
                   : std::vector<int64_t>{cc.outChannels, groupChannels, cc.kernelH, cc.kernelW});
  ir::Value *conv = c.node(OpKind::Conv2D, {x, w}, cc.params.attrs());
  ir::Value *out = conv;
  if (biasRelu) {
    ir::Value *bias = c.input("bias", dtype,
                              nhwc ? std::vector<int64_t>{cc.outChannels}
                                   : std::vector<int64_t>{cc.outChannels, 1, 1});
    out = c.node(OpKind::Relu, {c.node(OpKind::Add, {conv, bias})});
  }
  c.output(out);
  int64_t k = groupChannels * cc.kernelH * cc.kernelW;
  checkGpuContraction(c, k, cc.params.accumulate);
  checkGpuContraction(c, k, cc.params.accumulate,
                      lower::GpuConv2DSchedule{gpuGemm(32, 32, 8, 2, 2, 2)});
  checkGpuContraction(c, k, cc.params.accumulate,
                      lower::GpuConv2DSchedule{gpuGemm(64, 32, 16, 4, 2, 1)});
}

} // namespace

TEST_CASE("gpu conv2d: windows, padding, stride, dilation and groups in both layouts",
          "[lower][gpu-contraction]") {
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
        {2, 8, 9, 7, 8, 3, 3, params(layout, {1, 1}, {1, 1, 1, 1}, {1, 1}, 8), "depthwise"},
        {1, 4, 9, 7, 8, 3, 3, params(layout, {2, 2}, {1, 1, 1, 1}, {1, 1}, 4),
         "depthwise, multiplier 2, stride 2"},
        {1, 1, 7, 5, 3, 7, 5, params(layout), "window as large as the input"},
        {3, 1, 13, 13, 4, 3, 3, params(layout, {1, 1}, {3, 3, 3, 3}), "padding wider than a tap"},
        {2, 8, 6, 6, 16, 1, 1, params(layout), "1x1 with aligned channels (vector filter loads)"},
    };
    for (const ConvCase &cc : cases) {
      checkGpuConv(cc);
      checkGpuConv(cc, /*biasRelu=*/true);
    }
  }
}

TEST_CASE("gpu conv2d: narrow, wide and integer dtypes", "[lower][gpu-contraction]") {
  for (std::string layout : {"nchw", "nhwc"}) {
    for (DType dtype : {DType::F16, DType::BF16, DType::F64}) {
      ConvCase cc{2, 4, 9, 8, 6, 3, 3, params(layout, {1, 1}, {1, 1, 1, 1}), "dtype"};
      cc.params.accumulate = dtype == DType::F64 ? DType::F64 : DType::F32;
      checkGpuConv(cc, /*biasRelu=*/true, dtype);
    }
    ConvCase cc{2, 3, 7, 9, 5, 3, 3, params(layout, {2, 1}, {1, 1, 0, 2}), "i8"};
    cc.params.accumulate = DType::I32;
    checkGpuConv(cc, false, DType::I8);
  }
}

TEST_CASE("gpu conv2d: the CNN's second layer with bias and relu", "[lower][gpu-contraction]") {
  // Conv2D(64, 3x3) on 13x13x32 for one image: M*N*K = 64 * 121 * 288, about 2 * 10^6.
  for (std::string layout : {"nchw", "nhwc"})
    checkGpuConv({1, 32, 13, 13, 64, 3, 3, params(layout), "Conv2D(64, 3x3) on 13x13x32"},
                 /*biasRelu=*/true);
}
