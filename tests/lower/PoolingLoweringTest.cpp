// Pooling groups against the reference, on every target (LoweringTestUtil.h): max and average
// pooling in nchw and nhwc with padding and strides, count_include_pad, integer max pooling, NaN,
// global average pooling, depthwise convolutions (windows weighted by a filter), and fused
// prologues and epilogues.
#include "LoweringTestUtil.h"

namespace kiln::test {
namespace {

using ir::OpKind;
using Ints = std::vector<int64_t>;

struct Window {
  Ints kernel, stride, padding;
};

const Window kWindows[] = {
    {{2, 2}, {2, 2}, {0, 0, 0, 0}}, {{3, 3}, {1, 1}, {1, 1, 1, 1}}, {{3, 2}, {2, 3}, {2, 0, 1, 1}},
    {{1, 1}, {1, 1}, {0, 0, 0, 0}}, {{5, 5}, {3, 2}, {2, 1, 0, 4}},
};

Ints imageShape(bool nhwc, int64_t n, int64_t c, int64_t h, int64_t w) {
  return nhwc ? Ints{n, h, w, c} : Ints{n, c, h, w};
}

TEST_CASE("lowered max and average pooling in both layouts with padding", "[lower][pooling]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (const char *layout : {"nchw", "nhwc"}) {
    bool nhwc = std::string(layout) == "nhwc";
    for (const Window &window : kWindows) {
      for (OpKind kind : {OpKind::MaxPool2D, OpKind::AvgPool2D}) {
        for (bool includePad : {false, true}) {
          if (kind == OpKind::MaxPool2D && includePad)
            continue;
          INFO(ir::opName(kind) << " " << layout << " kernel " << ir::shapeStr(window.kernel)
                                << " stride " << ir::shapeStr(window.stride) << " padding "
                                << ir::shapeStr(window.padding) << " count_include_pad " << includePad);
          LoweringCase c(7);
          ir::Value *x = c.input("x", DType::F32, imageShape(nhwc, 2, 3, 11, 9));
          ir::AttrMap attrs{{"kernel", window.kernel}, {"stride", window.stride},
                            {"padding", window.padding}, {"layout", std::string(layout)}};
          if (kind == OpKind::AvgPool2D)
            attrs["count_include_pad"] = includePad;
          c.output(c.node(kind, {x}, attrs));
          c.check();
        }
      }
    }
  }
}

TEST_CASE("lowered pooling on narrow floats, integers and NaN", "[lower][pooling]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (const char *layout : {"nchw", "nhwc"}) {
    bool nhwc = std::string(layout) == "nhwc";
    ir::AttrMap attrs{{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}},
                      {"layout", std::string(layout)}};
    for (DType dtype : {DType::F16, DType::BF16, DType::F64, DType::I8, DType::I32}) {
      INFO(layout << " " << dtypeName(dtype));
      LoweringCase c(9);
      ir::Value *x = c.input("x", dtype, imageShape(nhwc, 1, 5, 8, 7), -100, 100);
      c.output(c.node(OpKind::MaxPool2D, {x}, attrs));
      if (isFloatingPoint(dtype))
        c.output(c.node(OpKind::AvgPool2D, {x}, attrs));
      c.check();
    }
    LoweringCase c(10);
    std::vector<double> values(16, 1.0);
    values[5] = kNaN;
    values[15] = -kInf;
    ir::Value *x = c.input("x", DType::F32, imageShape(nhwc, 1, 1, 4, 4), values);
    c.output(c.node(OpKind::MaxPool2D, {x}, attrs));
    c.output(c.node(OpKind::AvgPool2D, {x}, attrs));
    c.check();
  }
}

TEST_CASE("lowered global average pooling in both layouts", "[lower][pooling]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (const char *layout : {"nchw", "nhwc"}) {
    bool nhwc = std::string(layout) == "nhwc";
    for (DType dtype : {DType::F32, DType::F16, DType::F64}) {
      for (Ints hw : {Ints{7, 7}, Ints{1, 1}, Ints{3, 65}}) {
        INFO(layout << " " << dtypeName(dtype) << " " << ir::shapeStr(hw));
        LoweringCase c(11);
        ir::Value *x = c.input("x", dtype, imageShape(nhwc, 2, 5, hw[0], hw[1]));
        c.output(c.node(OpKind::GlobalAvgPool, {x}, {{"layout", std::string(layout)}}));
        c.check();
      }
    }
  }
}

TEST_CASE("pooling rows and channel blocks wider than one accumulator block", "[lower][pooling]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  LoweringCase c(13);
  ir::Value *wide = c.input("wide", DType::F32, {1, 1, 2, 4101});
  c.output(c.node(OpKind::MaxPool2D, {wide},
                  {{"kernel", Ints{2, 3}}, {"stride", Ints{1, 2}}, {"padding", Ints{0, 1, 1, 1}}}));
  ir::Value *deep = c.input("deep", DType::F32, {1, 3, 2, 1030});
  ir::AttrMap nhwc{{"kernel", Ints{2, 2}}, {"stride", Ints{1, 1}}, {"padding", Ints{1, 0, 0, 1}},
                   {"layout", std::string("nhwc")}};
  c.output(c.node(OpKind::AvgPool2D, {deep}, nhwc));
  c.output(c.node(OpKind::GlobalAvgPool, {deep}, {{"layout", std::string("nhwc")}}));
  c.check();
}

TEST_CASE("pooling fuses a prologue and an epilogue", "[lower][pooling]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  LoweringCase c(12);
  ir::Value *x = c.input("x", DType::F32, {2, 4, 10, 10});
  ir::Value *bias = c.input("bias", DType::F32, {4, 1, 1});
  ir::Value *pre = c.node(OpKind::Add, {x, bias});
  ir::Value *pool = c.node(OpKind::AvgPool2D, {pre},
                           {{"kernel", Ints{2, 2}}, {"stride", Ints{2, 2}}, {"padding", Ints{1, 0, 1, 0}}});
  c.output(c.node(OpKind::Relu, {pool}));
  auto plan = passes::planFusion(c.graph());
  REQUIRE(plan);
  REQUIRE(plan->groups.size() == 1);
  CHECK(plan->groups[0].kind == passes::GroupKind::Pooling);
  c.check();
}

/// A depthwise conv2d's attributes: one group per channel.
ir::AttrMap depthwiseAttrs(const char *layout, int64_t channels, Ints stride, Ints padding,
                           Ints dilation = {1, 1}, DType accumulate = DType::F32) {
  return {{"stride", std::move(stride)}, {"padding", std::move(padding)},
          {"dilation", std::move(dilation)}, {"groups", channels},
          {"layout", std::string(layout)}, {"accumulate", accumulate}};
}

Ints depthwiseFilter(bool nhwc, int64_t channels, int64_t kh, int64_t kw) {
  return nhwc ? Ints{channels, kh, kw, 1} : Ints{channels, 1, kh, kw};
}

struct DepthwiseWindow {
  int64_t kh, kw;
  Ints stride, padding, dilation;
};

const DepthwiseWindow kDepthwiseWindows[] = {
    {3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}}, {3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}},
    {5, 5, {2, 2}, {2, 2, 2, 2}, {1, 1}}, {3, 2, {2, 1}, {0, 2, 1, 0}, {1, 1}},
    {3, 3, {1, 1}, {2, 2, 2, 2}, {2, 2}}, {3, 3, {1, 1}, {3, 3, 3, 3}, {1, 1}},
    {1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
    // 10 columns of padding each side: more edge columns than an nhwc row unrolls, so every
    // row accumulates tap by tap.
    {3, 3, {1, 1}, {1, 1, 10, 10}, {1, 1}},
};

TEST_CASE("depthwise conv2d runs as a weighted window in a pooling group", "[lower][pooling]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (const char *layout : {"nchw", "nhwc"}) {
    bool nhwc = std::string(layout) == "nhwc";
    for (const DepthwiseWindow &window : kDepthwiseWindows) {
      // 37 channels: vectors and a tail; 11x9 images, odd both ways.
      INFO(layout << " window " << window.kh << "x" << window.kw << " stride "
                  << ir::shapeStr(window.stride) << " padding " << ir::shapeStr(window.padding)
                  << " dilation " << ir::shapeStr(window.dilation));
      LoweringCase c(17);
      ir::Value *x = c.input("x", DType::F32, imageShape(nhwc, 2, 37, 11, 9));
      ir::Value *w = c.input("w", DType::F32, depthwiseFilter(nhwc, 37, window.kh, window.kw));
      c.output(c.node(OpKind::Conv2D, {x, w},
                      depthwiseAttrs(layout, 37, window.stride, window.padding, window.dilation)));
      auto plan = passes::planFusion(c.graph());
      REQUIRE(plan);
      REQUIRE(plan->groups.size() == 1);
      CHECK(plan->groups[0].kind == passes::GroupKind::Pooling);
      c.check(static_cast<double>(window.kh * window.kw));
    }
  }
}

TEST_CASE("depthwise conv2d reads materialized operands, fuses an epilogue, takes other dtypes",
          "[lower][pooling]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (const char *layout : {"nchw", "nhwc"}) {
    bool nhwc = std::string(layout) == "nhwc";
    INFO(layout);
    {
      // relu(x + shift) -> depthwise with a scaled filter -> + bias -> clamp(0, 6): the window
      // would recompute a prologue per tap, so the input and the filter are kernels of their
      // own and the conv's group holds the conv and its epilogue.
      LoweringCase c(19);
      ir::Value *x = c.input("x", DType::F32, imageShape(nhwc, 1, 16, 10, 13));
      ir::Value *shift = c.input("shift", DType::F32, nhwc ? Ints{16} : Ints{16, 1, 1});
      ir::Value *w = c.input("w", DType::F32, depthwiseFilter(nhwc, 16, 3, 3));
      ir::Value *scale = c.input("scale", DType::F32, {});
      ir::Value *bias = c.input("bias", DType::F32, nhwc ? Ints{16} : Ints{16, 1, 1});
      ir::Value *pre = c.node(OpKind::Relu, {c.node(OpKind::Add, {x, shift})});
      ir::Value *filter = c.node(OpKind::Mul, {w, scale});
      ir::Value *conv = c.node(OpKind::Conv2D, {pre, filter},
                               depthwiseAttrs(layout, 16, {2, 2}, {1, 1, 1, 1}));
      c.output(c.node(OpKind::Clamp, {c.node(OpKind::Add, {conv, bias})},
                      {{"min", 0.0}, {"max", 6.0}}));
      auto plan = passes::planFusion(c.graph());
      REQUIRE(plan);
      REQUIRE(plan->groups.size() == 3);
      const passes::FusionGroup &last = plan->groups.back();
      CHECK(last.kind == passes::GroupKind::Pooling);
      CHECK(last.anchor == conv->definingNode());
      CHECK(last.nodes.size() == 3); // conv2d, add, clamp
      CHECK(last.inputs == std::vector<const ir::Value *>{pre, filter, bias});
      c.check(9.0);
    }
    {
      // A row of 130 pixels: the nhwc row's accumulators take the 70 channels in blocks.
      LoweringCase c(23);
      ir::Value *x = c.input("x", DType::F32, imageShape(nhwc, 1, 70, 3, 130));
      ir::Value *w = c.input("w", DType::F32, depthwiseFilter(nhwc, 70, 3, 3));
      c.output(c.node(OpKind::Conv2D, {x, w}, depthwiseAttrs(layout, 70, {1, 1}, {1, 1, 1, 1})));
      c.check(9.0);
    }
    for (DType dtype : {DType::F16, DType::BF16, DType::I8}) {
      INFO(dtypeName(dtype));
      LoweringCase c(29);
      bool integer = dtype == DType::I8;
      double bound = integer ? 100.0 : 2.0;
      ir::Value *x = c.input("x", dtype, imageShape(nhwc, 2, 12, 7, 8), -bound, bound);
      ir::Value *w = c.input("w", dtype, depthwiseFilter(nhwc, 12, 3, 3), -bound, bound);
      c.output(c.node(OpKind::Conv2D, {x, w},
                      depthwiseAttrs(layout, 12, {1, 1}, {1, 0, 0, 1}, {1, 1},
                                     integer ? DType::I32 : DType::F32)));
      c.check(9.0);
    }
  }
}

} // namespace
} // namespace kiln::test
