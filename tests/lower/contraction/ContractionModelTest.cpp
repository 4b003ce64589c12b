// Contractions inside whole models, run group by group through the lowering harness
// (GroupRunner.h): the seed CNN in both layouts and an MLP, every group lowered with its
// default schedule and JIT-compiled, against the reference interpreter.
#include "lower/GroupRunner.h"
#include "lower/contraction/ContractionTestUtil.h"

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;

namespace {

ir::AttrMap poolAttrs(const std::string &layout) {
  return {{"kernel", std::vector<int64_t>{2, 2}},
          {"stride", std::vector<int64_t>{2, 2}},
          {"layout", layout}};
}

/// Conv2D(32, 3x3, relu) MaxPool Conv2D(64, 3x3, relu) MaxPool Conv2D(64, 3x3, relu) Flatten
/// Dense(64, relu) Dense(10) softmax on 28x28x1 images.
void buildCnn(GraphCase &c, const std::string &layout, int64_t images) {
  bool nhwc = layout == "nhwc";
  auto image = [&](int64_t channels, int64_t size) {
    return nhwc ? std::vector<int64_t>{images, size, size, channels}
                : std::vector<int64_t>{images, channels, size, size};
  };
  auto filter = [&](int64_t out, int64_t in) {
    return nhwc ? std::vector<int64_t>{out, 3, 3, in} : std::vector<int64_t>{out, in, 3, 3};
  };
  auto bias = [&](int64_t out) {
    return nhwc ? std::vector<int64_t>{out} : std::vector<int64_t>{out, 1, 1};
  };
  ConvParams p;
  p.layout = layout;
  ir::Value *x = c.input("x", DType::F32, image(1, 28));
  int64_t channels = 1;
  int index = 0;
  for (int64_t out : {32, 64, 64}) {
    std::string n = std::to_string(index++);
    ir::Value *w = c.input("conv_w" + n, DType::F32, filter(out, channels));
    ir::Value *b = c.input("conv_b" + n, DType::F32, bias(out));
    x = c.node(OpKind::Relu, {c.node(OpKind::Add, {c.node(OpKind::Conv2D, {x, w}, p.attrs()), b})});
    if (index < 3)
      x = c.node(OpKind::MaxPool2D, {x}, poolAttrs(layout));
    channels = out;
  }
  // 28 -> 26 -> 13 -> 11 -> 5 -> 3: 64 x 3 x 3 features per image.
  x = c.node(OpKind::Reshape, {x}, {{"shape", std::vector<int64_t>{images, 576}}});
  ir::Value *w1 = c.input("dense_w0", DType::F32, {576, 64});
  ir::Value *b1 = c.input("dense_b0", DType::F32, {64});
  x = c.node(OpKind::Relu,
             {c.node(OpKind::Add, {c.node(OpKind::MatMul, {x, w1}, matmulAttrs()), b1})});
  ir::Value *w2 = c.input("dense_w1", DType::F32, {64, 10});
  ir::Value *b2 = c.input("dense_b1", DType::F32, {10});
  x = c.node(OpKind::Add, {c.node(OpKind::MatMul, {x, w2}, matmulAttrs()), b2});
  c.output(c.node(OpKind::Softmax, {x}));
}

/// `toleranceScale`: how much larger than the outputs the summed terms are (the f32 rounding
/// error follows the terms, not the result they cancel down to).
void checkModel(GraphCase &c, int expectedContractions, double toleranceScale = 1.0) {
  auto plan = passes::planFusion(c.graph());
  REQUIRE(plan);
  int contractions = 0;
  for (const passes::FusionGroup &group : plan->groups)
    contractions += group.kind == passes::GroupKind::Contraction;
  CHECK(contractions == expectedContractions);
  GroupRunOptions options;
  options.executor = Executor::Jit;
  auto got = runLoweredGraph(c.graph(), c.inputs(), options);
  INFO((got ? std::string() : got.error().str()));
  REQUIRE(got);
  auto want = ir::interpret(c.graph(), c.inputs());
  REQUIRE(want);
  std::string mismatch = compareTensors(got->at("out"), want->at("out"), toleranceScale);
  INFO(mismatch);
  CHECK(mismatch.empty());
}

} // namespace

TEST_CASE("models: the seed CNN in both layouts", "[lower][contraction][model]") {
  for (const char *layout : {"nchw", "nhwc"}) {
    INFO(layout);
    GraphCase c(31);
    buildCnn(c, layout, 16);
    checkModel(c, 5);
  }
}

TEST_CASE("models: an MLP with a residual connection", "[lower][contraction][model]") {
  GraphCase c(32);
  ir::Value *x = c.input("x", DType::F32, {37, 100});
  ir::Value *w0 = c.input("w0", DType::F32, {100, 100});
  ir::Value *b0 = c.input("b0", DType::F32, {100});
  ir::Value *h = c.node(
      OpKind::Relu, {c.node(OpKind::Add, {c.node(OpKind::MatMul, {x, w0}, matmulAttrs()), b0})});
  ir::Value *w1 = c.input("w1", DType::F32, {100, 100});
  ir::Value *r = c.node(OpKind::Add, {c.node(OpKind::MatMul, {h, w1}, matmulAttrs()), x});
  ir::Value *w2 = c.input("w2", DType::F32, {10, 100});
  c.output(c.node(OpKind::MatMul, {r, w2}, matmulAttrs(false, true)));
  // Unit inputs through three 100-term layers: terms of size ~30 sum to outputs of size ~1.
  checkModel(c, 3, 30.0);
}
