// The "winograd" pass: which convolutions it rewrites, and that the rewritten
// graph computes the convolution (fp64 reference of both graphs), in inference
// graphs and through the gradients of a training graph.
#include "PassTestUtil.h"

#include "ir/graph/Printer.h"
#include "passes/graph/Autodiff.h"
#include "passes/graph/GraphPasses.h"

#include <fmt/format.h>

#include <functional>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;

namespace {

Value *addOp(Graph &graph, OpKind kind, std::vector<Value *> operands, AttrMap attrs = {}) {
  auto value = graph.addNode(kind, std::move(operands), std::move(attrs));
  if (!value)
    FAIL(value.error().str());
  return *value;
}

/// A graph of one conv2d on x [n, c, h, w] with filter [o, c/groups, k, k] and `attrs`,
/// then bias and relu (the epilogue the output transform takes).
std::unique_ptr<Graph> convGraph(DType dtype, Shape x, int64_t o, int64_t k, AttrMap attrs = {}) {
  auto graph = std::make_unique<Graph>("conv");
  int64_t groups = attrs.contains("groups") ? std::get<int64_t>(attrs.at("groups")) : 1;
  Value *in = *graph->addInput("x", tensorType(dtype, x));
  bool nhwc = attrs.contains("layout") && std::get<std::string>(attrs.at("layout")) == "nhwc";
  Shape filter = nhwc ? Shape{o, k, k, x[3] / groups} : Shape{o, x[1] / groups, k, k};
  Value *w = *graph->addParam("w", tensorType(dtype, filter));
  Value *b = *graph->addParam("b", tensorType(dtype, nhwc ? Shape{o} : Shape{o, 1, 1}));
  Value *conv = addOp(*graph, OpKind::Conv2D, {in, w}, std::move(attrs));
  Value *y = addOp(*graph, OpKind::Relu, {addOp(*graph, OpKind::Add, {conv, b})});
  REQUIRE(graph->addOutput("y", y));
  return graph;
}

using Ints = std::vector<int64_t>;

/// Whether the pass rewrote the graph's convolution (none is left).
bool rewrites(std::unique_ptr<Graph> graph, WinogradOptions options = {}) {
  bool changed = runPassOrFail(createWinogradPass(options), *graph);
  CHECK(changed == (countNodes(*graph, OpKind::Conv2D) == 0));
  return changed;
}

/// The rewritten graph's outputs against the original's on the fp64 reference, which rounds
/// every op to f32: a wrong transform coefficient is off by O(1), f32 rounding by ~1e-6.
void checkSameValues(const std::function<std::unique_ptr<Graph>()> &build,
                     WinogradOptions options, double tolerance) {
  auto original = build();
  auto rewritten = build();
  size_t convs = countNodes(*rewritten, OpKind::Conv2D);
  REQUIRE(runPassOrFail(createWinogradPass(options), *rewritten));
  REQUIRE(countNodes(*rewritten, OpKind::Conv2D) < convs);
  for (uint64_t seed : {1, 2}) {
    NamedTensors bindings = randomBindings(*original, seed);
    requireCloseOutputs(interpretOrFail(*original, bindings), interpretOrFail(*rewritten, bindings),
                        tolerance);
  }
}

} // namespace

TEST_CASE("winograd takes f32 3x3 stride-1 convolutions with enough channels",
          "[passes][winograd]") {
  // 256 channels in and out, 20 x 20 outputs: at the default bounds (docs/winograd.md).
  const Shape deep = {1, 256, 22, 22};
  const DType f32 = DType::F32;
  CHECK(rewrites(convGraph(f32, deep, 256, 3)));
  CHECK(rewrites(convGraph(f32, deep, 256, 3, {{"padding", Ints{1, 1, 1, 1}}})));
  CHECK(rewrites(convGraph(f32, deep, 512, 3, {{"padding", Ints{2, 0, 1, 3}}})));
  CHECK(rewrites(convGraph(f32, {1, 192, 22, 22}, 384, 3))); // mean 256
  CHECK(rewrites(convGraph(f32, {9, 256, 9, 9}, 256, 3)));   // 9 x 7 x 7 pixels
  // Not: other strides, dilations, groups, filter sizes, other dtypes and layouts, tf32.
  CHECK_FALSE(rewrites(convGraph(f32, deep, 256, 3, {{"stride", Ints{2, 2}}})));
  CHECK_FALSE(rewrites(convGraph(f32, deep, 256, 3, {{"stride", Ints{1, 2}}})));
  CHECK_FALSE(rewrites(convGraph(f32, deep, 256, 3, {{"dilation", Ints{2, 2}}})));
  CHECK_FALSE(rewrites(convGraph(f32, deep, 256, 3, {{"groups", int64_t{2}}})));
  CHECK_FALSE(rewrites(convGraph(f32, deep, 256, 1)));
  CHECK_FALSE(rewrites(convGraph(f32, deep, 256, 5, {{"padding", Ints{2, 2, 2, 2}}})));
  CHECK_FALSE(rewrites(convGraph(DType::BF16, deep, 256, 3)));
  CHECK_FALSE(rewrites(convGraph(DType::F64, deep, 256, 3, {{"accumulate", DType::F64}})));
  CHECK_FALSE(rewrites(convGraph(f32, deep, 256, 3, {{"accumulate", DType::F64}})));
  CHECK_FALSE(rewrites(convGraph(f32, deep, 256, 3, {{"allow_tf32", true}})));
  // nhwc at its own bounds (a mean of 128 channels over 49 output pixels, or of 80 over 784),
  // with the same form.
  const AttrMap nhwc = {{"layout", std::string("nhwc")}};
  CHECK(rewrites(convGraph(f32, {1, 9, 9, 128}, 128, 3, nhwc)));  // 7 x 7 pixels
  CHECK(rewrites(convGraph(f32, {1, 22, 22, 96}, 192, 3, nhwc))); // mean 128
  CHECK(rewrites(convGraph(f32, {1, 30, 30, 64}, 128, 3, nhwc))); // mean 85, 28 x 28 pixels
  CHECK_FALSE(rewrites(convGraph(f32, {1, 16, 16, 64}, 128, 3, nhwc))); // 14 x 14 pixels
  CHECK_FALSE(rewrites(convGraph(f32, {4, 58, 58, 64}, 64, 3, nhwc)));  // mean 64
  CHECK_FALSE(rewrites(convGraph(f32, {1, 8, 8, 512}, 512, 3, nhwc))); // 6 x 6 pixels
  CHECK_FALSE(rewrites(convGraph(f32, {1, 22, 22, 256}, 256, 3,
                                 {{"layout", std::string("nhwc")}, {"stride", Ints{2, 2}}})));
  CHECK_FALSE(rewrites(convGraph(f32, {1, 22, 22, 256}, 256, 3,
                                 {{"layout", std::string("nhwc")}, {"groups", int64_t{2}}})));
  // Not: few channels (the mean of 128 and 256, of 64 and 4096), few pixels (1 x 14 x 14,
  // 8 x 7 x 7).
  CHECK_FALSE(rewrites(convGraph(f32, {1, 128, 22, 22}, 256, 3)));
  CHECK_FALSE(rewrites(convGraph(f32, {1, 64, 22, 22}, 4096, 3)));
  CHECK_FALSE(rewrites(convGraph(f32, {1, 512, 14, 14}, 512, 3, {{"padding", Ints{1, 1, 1, 1}}})));
  CHECK_FALSE(rewrites(convGraph(f32, {8, 512, 9, 9}, 512, 3)));
  // An output smaller than one tile each way.
  CHECK_FALSE(rewrites(convGraph(f32, {1, 5, 3, 9}, 7, 3), WinogradOptions::anySize()));
  CHECK_FALSE(rewrites(convGraph(f32, {1, 5, 5, 5}, 7, 3), WinogradOptions::anySize(4)));
  // The bounds are options.
  CHECK(rewrites(convGraph(f32, {1, 5, 9, 9}, 7, 3), WinogradOptions::anySize()));
}

TEST_CASE("winograd computes the convolution: odd sizes, partial tiles, any padding",
          "[passes][winograd]") {
  struct Case {
    Shape x;
    int64_t o;
    Ints padding;
  };
  // H and W odd (the last tiles partial), channels not multiples of a vector, batch 1 and 3.
  const Case cases[] = {
      {{1, 5, 9, 7}, 7, {1, 1, 1, 1}}, {{3, 5, 9, 7}, 7, {1, 1, 1, 1}},
      {{3, 3, 7, 11}, 5, {0, 0, 0, 0}}, {{1, 4, 8, 9}, 3, {2, 0, 0, 1}},
      {{2, 6, 10, 10}, 4, {1, 1, 1, 1}},
  };
  for (std::string layout : {"nchw", "nhwc"})
    for (int tile : {2, 4})
      for (const Case &c : cases) {
        INFO(layout << " F(" << tile << "x" << tile << ", 3x3) on x " << shapeStr(c.x) << ", "
                    << c.o << " outputs, padding " << shapeStr(c.padding));
        // The case's sizes in nchw order; nhwc moves the channels last.
        Shape x = layout == "nhwc" ? Shape{c.x[0], c.x[2], c.x[3], c.x[1]} : c.x;
        AttrMap attrs = {{"padding", c.padding}, {"layout", layout}};
        // F(4x4, 3x3) amplifies the rounding of its larger coefficients.
        checkSameValues([&] { return convGraph(DType::F32, x, c.o, 3, attrs); },
                        WinogradOptions::anySize(tile), tile == 2 ? 1e-5 : 1e-4);
      }
}

TEST_CASE("winograd keeps a training graph's gradients", "[passes][winograd]") {
  // loss = sum(relu(conv(x, w) + b) * t): the gradients of x and w run a 3x3 stride-1
  // convolution of the upstream gradient, which the pass takes too.
  auto build = [] {
    auto graph = std::make_unique<Graph>("train");
    const DType f32 = DType::F32;
    Value *x = *graph->addInput("x", tensorType(f32, {2, 4, 7, 9}));
    Value *t = *graph->addInput("t", tensorType(f32, {2, 5, 7, 9}));
    Value *w = *graph->addParam("w", tensorType(f32, {5, 4, 3, 3}));
    Value *b = *graph->addParam("b", tensorType(f32, {5, 1, 1}));
    Value *conv = addOp(*graph, OpKind::Conv2D, {x, w}, {{"padding", Ints{1, 1, 1, 1}}});
    Value *y = addOp(*graph, OpKind::Relu, {addOp(*graph, OpKind::Add, {conv, b})});
    Value *loss = addOp(*graph, OpKind::ReduceSum, {addOp(*graph, OpKind::Mul, {y, t})},
                        {{"axes", Ints{0, 1, 2, 3}}});
    REQUIRE(graph->addOutput("loss", loss));
    std::vector<Value *> wrt = {x, w, b};
    auto gradients = appendGradients(*graph, loss, wrt);
    REQUIRE(gradients);
    for (size_t i = 0; i < gradients->size(); ++i)
      REQUIRE(graph->addOutput(fmt::format("g{}", i), (*gradients)[i]));
    return graph;
  };
  // The sum of relu's gradients and of the filter gradient's products: looser than one conv.
  checkSameValues(build, WinogradOptions::anySize(), 1e-4);
}
