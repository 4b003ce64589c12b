// The gradient rules of conv2d, max_pool2d and avg_pool2d against central
// finite differences: for y = op(x, w) and L = reduce_sum(y * r) with random r,
// the rule applied to r must give dL/dx and dL/dw, all run in fp64 through the
// reference interpreter. Plus one CPU compile of each rule's graph, the dtypes
// of f16/bf16 gradients, and the errors.
#include "ir/graph/gradients/WindowGradients.h"

#include "compiler/Compile.h"
#include "ir/graph/Interpreter.h"
#include "support/Tolerance.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace kiln;
using namespace kiln::ir;

namespace {

using GradientRule = Expected<std::vector<Value *>> (*)(Graph &, const Node &, Value *);

GradientRule ruleFor(OpKind kind) {
  switch (kind) {
  case OpKind::Conv2D: return gradientConv2D;
  case OpKind::MaxPool2D: return gradientMaxPool2D;
  case OpKind::AvgPool2D: return gradientAvgPool2D;
  default: FAIL("no window gradient rule for " << opName(kind)); return nullptr;
  }
}

/// One window op applied to operands x0 (and x1, the filter).
struct WindowCase {
  OpKind kind;
  std::vector<Shape> operandShapes;
  AttrMap attrs;
};

std::string describe(const WindowCase &c) {
  std::string text(opName(c.kind));
  for (const Shape &shape : c.operandShapes)
    text += fmt::format(" {}", shapeStr(shape));
  for (const auto &[name, value] : c.attrs)
    text += fmt::format(" {}={}", name, attrStr(value));
  return text;
}

/// A fresh seed per call, printed with every failure.
uint64_t nextSeed() {
  static uint64_t counter = 0;
  return Catch::rngSeed() * 0x9e3779b97f4a7c15ULL + ++counter;
}

/// The "loss" output of `graph` on `inputs`.
double lossOf(const Graph &graph, const NamedTensors &inputs) {
  auto outputs = interpret(graph, inputs);
  REQUIRE(outputs.has_value());
  return outputs->at("loss").getDouble(0);
}

/// The graph of one case in `dtype`: inputs x0.. and r (the result gradient),
/// output "loss" = reduce_sum(y * r) and, with `withGradients`, "grad0".. from
/// the rule (an operand without a gradient gets no output).
std::unique_ptr<Graph> buildGraph(const WindowCase &c, DType dtype, bool withGradients) {
  auto graph = std::make_unique<Graph>("window_gradient");
  std::vector<Value *> operands;
  for (size_t i = 0; i < c.operandShapes.size(); ++i) {
    auto operand = graph->addInput(fmt::format("x{}", i), TensorType{dtype, c.operandShapes[i]});
    REQUIRE(operand.has_value());
    operands.push_back(*operand);
  }
  auto result = graph->addNode(c.kind, operands, c.attrs);
  if (!result)
    FAIL(result.error().str());
  auto gradient = graph->addInput("r", (*result)->type());
  REQUIRE(gradient.has_value());
  auto product = graph->addNode(OpKind::Mul, {*result, *gradient});
  REQUIRE(product.has_value());
  auto loss =
      graph->addNode(OpKind::ReduceSum, {*product}, {{"axes", std::vector<int64_t>{0, 1, 2, 3}}});
  REQUIRE(loss.has_value());
  REQUIRE(graph->addOutput("loss", *loss).has_value());
  if (withGradients) {
    auto gradients = ruleFor(c.kind)(*graph, *(*result)->definingNode(), *gradient);
    if (!gradients)
      FAIL(gradients.error().str());
    REQUIRE(gradients->size() == operands.size());
    for (size_t i = 0; i < gradients->size(); ++i) {
      REQUIRE((*gradients)[i] != nullptr);
      CHECK((*gradients)[i]->type() == operands[i]->type());
      REQUIRE(graph->addOutput(fmt::format("grad{}", i), (*gradients)[i]).has_value());
    }
  }
  return graph;
}

/// Random inputs for a case. Max pool gets distinct negative values at least
/// 0.01 apart, so no window has a tie, no perturbation below 0.005 changes a
/// window's winner, and padding (were it ever chosen) would win every window
/// it reaches.
NamedTensors randomInputs(const WindowCase &c, const Graph &graph, DType dtype, Rng &rng) {
  NamedTensors inputs;
  for (Value *input : graph.inputs()) {
    const TensorType &type = input->type();
    if (c.kind == OpKind::MaxPool2D && input->name() == "x0") {
      std::vector<double> values(static_cast<size_t>(type.numElements()));
      std::iota(values.begin(), values.end(), 1.0);
      for (size_t i = values.size(); i > 1; --i) // Fisher-Yates
        std::swap(values[i - 1], values[static_cast<size_t>(rng.nextU64() % i)]);
      for (double &value : values)
        value *= -0.01;
      inputs.emplace(input->name(), HostTensor::fromDoubles(dtype, type.shape, values));
    } else {
      inputs.emplace(input->name(), HostTensor::randomNormal(dtype, type.shape, rng));
    }
  }
  return inputs;
}

/// Checks every element of every operand gradient against the central
/// difference (L(x + eps) - L(x - eps)) / 2eps. L is linear in each operand
/// (piecewise for max pool, with no winner changing under eps), so the
/// difference has no truncation error and only rounding remains: ~1e-14 / eps.
void checkAgainstFiniteDifferences(const WindowCase &c) {
  uint64_t seed = nextSeed();
  INFO(describe(c) << " (seed " << seed << ")");
  std::unique_ptr<Graph> gradientGraph = buildGraph(c, DType::F64, true);
  std::unique_ptr<Graph> lossGraph = buildGraph(c, DType::F64, false);
  Rng rng(seed);
  NamedTensors inputs = randomInputs(c, *gradientGraph, DType::F64, rng);
  auto outputs = interpret(*gradientGraph, inputs);
  if (!outputs)
    FAIL(outputs.error().str());
  const double epsilon = 1e-3, tolerance = 1e-9;
  for (size_t i = 0; i < c.operandShapes.size(); ++i) {
    std::string name = fmt::format("x{}", i);
    const HostTensor &gradient = outputs->at(fmt::format("grad{}", i));
    double largest = 0;
    int64_t mismatches = 0;
    for (int64_t element = 0; element < gradient.numElements(); ++element) {
      NamedTensors perturbed = inputs;
      double value = inputs.at(name).getDouble(element);
      perturbed.at(name).setDouble(element, value + epsilon);
      double above = lossOf(*lossGraph, perturbed);
      perturbed.at(name).setDouble(element, value - epsilon);
      double below = lossOf(*lossGraph, perturbed);
      double expected = (above - below) / (2 * epsilon);
      double got = gradient.getDouble(element);
      largest = std::max(largest, std::fabs(expected));
      if (std::fabs(got - expected) > tolerance * (1 + std::fabs(expected))) {
        if (++mismatches <= 3)
          FAIL_CHECK("d loss / d " << name << " element " << element << ": rule " << got
                                   << ", finite difference " << expected);
      }
    }
    CHECK(mismatches == 0);
    // A gradient that is zero everywhere would pass against an op that ignores
    // its operand; every case here has windows that read the input.
    CHECK(largest > 0.01);
  }
}

AttrMap convAttrs(std::string layout, std::vector<int64_t> stride, std::vector<int64_t> padding,
                  std::vector<int64_t> dilation, int64_t groups) {
  return {{"layout", std::move(layout)},
          {"stride", std::move(stride)},
          {"padding", std::move(padding)},
          {"dilation", std::move(dilation)},
          {"groups", groups},
          {"accumulate", DType::F64}};
}

AttrMap poolAttrs(std::string layout, std::vector<int64_t> kernel, std::vector<int64_t> stride,
                  std::vector<int64_t> padding) {
  return {{"layout", std::move(layout)},
          {"kernel", std::move(kernel)},
          {"stride", std::move(stride)},
          {"padding", std::move(padding)}};
}

/// An image of batch 2 with `channels` channels and H x W pixels in `layout`.
Shape image(const std::string &layout, int64_t channels, int64_t height, int64_t width) {
  return layout == "nhwc" ? Shape{2, height, width, channels} : Shape{2, channels, height, width};
}

/// A filter of `out` output channels, `in` channels per group and KH x KW taps.
Shape filter(const std::string &layout, int64_t out, int64_t in, int64_t kh, int64_t kw) {
  return layout == "nhwc" ? Shape{out, kh, kw, in} : Shape{out, in, kh, kw};
}

} // namespace

TEST_CASE("conv2d gradients match finite differences", "[window-gradients]") {
  std::vector<WindowCase> cases;
  for (std::string layout : {"nchw", "nhwc"}) {
    // Plain 3x3 valid, odd 7x5 image.
    cases.push_back({OpKind::Conv2D,
                     {image(layout, 3, 7, 5), filter(layout, 4, 3, 3, 3)},
                     convAttrs(layout, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1)});
    // Stride 2 with asymmetric padding, a 3x2 window.
    cases.push_back({OpKind::Conv2D,
                     {image(layout, 2, 7, 6), filter(layout, 3, 2, 3, 2)},
                     convAttrs(layout, {2, 2}, {1, 0, 2, 1}, {1, 1}, 1)});
    // Dilation 2, two groups, stride (2, 1), padding on some sides only.
    cases.push_back({OpKind::Conv2D,
                     {image(layout, 4, 7, 5), filter(layout, 6, 2, 2, 3)},
                     convAttrs(layout, {2, 1}, {2, 1, 0, 1}, {2, 2}, 2)});
    // Depthwise (channel multiplier 2), stride (1, 2), dilation (2, 1), "same" padding.
    cases.push_back({OpKind::Conv2D,
                     {image(layout, 3, 5, 7), filter(layout, 6, 1, 3, 3)},
                     convAttrs(layout, {1, 2}, {2, 2, 1, 1}, {2, 1}, 3)});
  }
  // A stride of 3 that leaves the last input rows and columns unread.
  cases.push_back({OpKind::Conv2D,
                   {image("nchw", 2, 7, 8), filter("nchw", 2, 2, 2, 2)},
                   convAttrs("nchw", {3, 3}, {0, 0, 0, 0}, {1, 1}, 1)});
  // A 1x1 stride-2 projection (a ResNet shortcut) in nhwc.
  cases.push_back({OpKind::Conv2D,
                   {image("nhwc", 3, 5, 5), filter("nhwc", 4, 3, 1, 1)},
                   convAttrs("nhwc", {2, 2}, {0, 0, 0, 0}, {1, 1}, 1)});
  for (const WindowCase &c : cases)
    checkAgainstFiniteDifferences(c);
}

TEST_CASE("conv2d gradients where windows reach only padding", "[window-gradients]") {
  // Stride 5 over 2 rows with 3 rows of top padding: the one output row reads
  // only padding, so no gradient flows along H; the shapes must still come out
  // right (the filter gradient crops an over-long transposed convolution).
  WindowCase c{OpKind::Conv2D,
               {image("nchw", 2, 2, 3), filter("nchw", 2, 2, 1, 2)},
               convAttrs("nchw", {5, 1}, {3, 0, 0, 0}, {1, 1}, 1)};
  std::unique_ptr<Graph> graph = buildGraph(c, DType::F64, true);
  Rng rng(nextSeed());
  auto outputs = interpret(*graph, randomInputs(c, *graph, DType::F64, rng));
  REQUIRE(outputs.has_value());
  for (const char *name : {"grad0", "grad1"}) {
    std::vector<double> values = outputs->at(name).toDoubles();
    CHECK(std::all_of(values.begin(), values.end(), [](double v) { return v == 0.0; }));
  }
}

TEST_CASE("max_pool2d gradient matches finite differences", "[window-gradients]") {
  std::vector<WindowCase> cases;
  for (std::string layout : {"nchw", "nhwc"}) {
    // The common 2x2/2 pool; 7x5 leaves a row and a column no window reads.
    cases.push_back({OpKind::MaxPool2D,
                     {image(layout, 3, 7, 5)},
                     poolAttrs(layout, {2, 2}, {2, 2}, {0, 0, 0, 0})});
    // Overlapping 3x3/2 windows with padding.
    cases.push_back({OpKind::MaxPool2D,
                     {image(layout, 2, 7, 6)},
                     poolAttrs(layout, {3, 3}, {2, 2}, {1, 1, 1, 1})});
    // Stride 1, asymmetric padding, 3x2 windows.
    cases.push_back({OpKind::MaxPool2D,
                     {image(layout, 2, 5, 7)},
                     poolAttrs(layout, {3, 2}, {1, 2}, {2, 0, 1, 0})});
  }
  for (const WindowCase &c : cases)
    checkAgainstFiniteDifferences(c);
}

TEST_CASE("max_pool2d gradient goes to the first maximum of a window", "[window-gradients]") {
  // Two overlapping 2x2 windows of a 2x3 image with ties: the first maximal
  // element in row-major window order takes the whole gradient.
  WindowCase c{
      OpKind::MaxPool2D, {Shape{1, 1, 2, 3}}, poolAttrs("nchw", {2, 2}, {1, 1}, {0, 0, 0, 0})};
  std::unique_ptr<Graph> graph = buildGraph(c, DType::F64, true);
  NamedTensors inputs;
  inputs.emplace("x0", HostTensor::fromDoubles(DType::F64, {1, 1, 2, 3},
                                               std::vector<double>{5, 5, 1, 5, 2, 5}));
  inputs.emplace("r",
                 HostTensor::fromDoubles(DType::F64, {1, 1, 1, 2}, std::vector<double>{10, 100}));
  auto outputs = interpret(*graph, inputs);
  REQUIRE(outputs.has_value());
  CHECK(outputs->at("grad0").toDoubles() == std::vector<double>{10, 100, 0, 0, 0, 0});
}

TEST_CASE("avg_pool2d gradient matches finite differences", "[window-gradients]") {
  std::vector<WindowCase> cases;
  for (bool countPadding : {false, true}) {
    for (std::string layout : {"nchw", "nhwc"}) {
      cases.push_back({OpKind::AvgPool2D,
                       {image(layout, 3, 7, 5)},
                       poolAttrs(layout, {2, 2}, {2, 2}, {0, 0, 0, 0})});
      cases.push_back({OpKind::AvgPool2D,
                       {image(layout, 2, 7, 6)},
                       poolAttrs(layout, {3, 3}, {2, 2}, {1, 1, 1, 1})});
      cases.push_back({OpKind::AvgPool2D,
                       {image(layout, 2, 5, 7)},
                       poolAttrs(layout, {3, 2}, {1, 2}, {2, 0, 1, 0})});
    }
    for (WindowCase &c : cases)
      c.attrs["count_include_pad"] = countPadding;
    for (const WindowCase &c : cases)
      checkAgainstFiniteDifferences(c);
    cases.clear();
  }
}

TEST_CASE("window gradients compile and run on the CPU", "[window-gradients]") {
  // One graph with all three rules in f32: a grouped, strided, padded nhwc conv
  // and overlapping padded nchw pools, compiled once and compared with the
  // reference interpreter at f32's tolerance (kiln::toleranceFor: rel 1e-4,
  // abs 1e-5 of the largest value).
  std::vector<WindowCase> cases{
      {OpKind::Conv2D,
       {image("nhwc", 4, 9, 7), filter("nhwc", 6, 2, 3, 3)},
       convAttrs("nhwc", {2, 2}, {1, 0, 2, 1}, {1, 1}, 2)},
      {OpKind::MaxPool2D,
       {image("nchw", 3, 9, 7)},
       poolAttrs("nchw", {3, 3}, {2, 2}, {1, 0, 1, 1})},
      {OpKind::AvgPool2D,
       {image("nchw", 3, 9, 7)},
       poolAttrs("nchw", {3, 2}, {2, 1}, {1, 1, 0, 1})},
  };
  cases[0].attrs["accumulate"] = DType::F32;
  Graph graph("window_gradients_cpu");
  NamedTensors inputs;
  uint64_t seed = nextSeed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (size_t index = 0; index < cases.size(); ++index) {
    const WindowCase &c = cases[index];
    std::vector<Value *> operands;
    for (size_t i = 0; i < c.operandShapes.size(); ++i) {
      std::string name = fmt::format("op{}_x{}", index, i);
      auto operand = graph.addInput(name, TensorType{DType::F32, c.operandShapes[i]});
      REQUIRE(operand.has_value());
      operands.push_back(*operand);
      inputs.emplace(name, HostTensor::randomNormal(DType::F32, c.operandShapes[i], rng));
    }
    auto result = graph.addNode(c.kind, operands, c.attrs);
    REQUIRE(result.has_value());
    std::string gradientName = fmt::format("op{}_r", index);
    auto gradient = graph.addInput(gradientName, (*result)->type());
    REQUIRE(gradient.has_value());
    inputs.emplace(gradientName,
                   HostTensor::randomNormal(DType::F32, (*result)->type().shape, rng));
    auto gradients = ruleFor(c.kind)(graph, *(*result)->definingNode(), *gradient);
    REQUIRE(gradients.has_value());
    for (size_t i = 0; i < gradients->size(); ++i)
      REQUIRE(graph.addOutput(fmt::format("op{}_grad{}", index, i), (*gradients)[i]).has_value());
  }
  auto expected = interpret(graph, inputs);
  REQUIRE(expected.has_value());
  CompileOptions options;
  options.target = TargetKind::Cpu;
  auto model = compile(graph, options);
  if (!model)
    FAIL(model.error().str());
  RunOptions runOptions;
  runOptions.poisonBuffers = true; // elements no kernel writes cannot pass
  auto actual = model->run(inputs, runOptions);
  if (!actual)
    FAIL(actual.error().str());
  REQUIRE(actual->size() == expected->size());
  for (const auto &[name, tensor] : *expected) {
    INFO(name);
    Comparison comparison = compareTensors(actual->at(name), tensor, toleranceFor(DType::F32));
    INFO(comparison.firstMismatchStr);
    CHECK(comparison.ok);
  }
}

TEST_CASE("f16 and bf16 convolutions give gradients of their dtype", "[window-gradients]") {
  // The rule keeps the forward's accumulate (f32), so the narrow gradients are
  // the fp64 ones rounded about once: compared at the dtype's tolerance.
  WindowCase c{OpKind::Conv2D,
               {image("nchw", 3, 6, 5), filter("nchw", 4, 3, 3, 3)},
               convAttrs("nchw", {2, 1}, {1, 1, 0, 1}, {1, 1}, 1)};
  c.attrs["accumulate"] = DType::F32;
  for (DType dtype : {DType::F16, DType::BF16}) {
    INFO(dtypeName(dtype));
    std::unique_ptr<Graph> narrow = buildGraph(c, dtype, true);
    WindowCase wideCase = c;
    wideCase.attrs["accumulate"] = DType::F64;
    std::unique_ptr<Graph> wide = buildGraph(wideCase, DType::F64, true);
    Rng rng(nextSeed());
    NamedTensors narrowInputs = randomInputs(c, *narrow, dtype, rng);
    NamedTensors wideInputs;
    for (const auto &[name, tensor] : narrowInputs)
      wideInputs.emplace(name, tensor.castTo(DType::F64));
    auto narrowOutputs = interpret(*narrow, narrowInputs);
    auto wideOutputs = interpret(*wide, wideInputs);
    REQUIRE(narrowOutputs.has_value());
    REQUIRE(wideOutputs.has_value());
    for (const char *name : {"grad0", "grad1"}) {
      INFO(name);
      const HostTensor &gradient = narrowOutputs->at(name);
      CHECK(gradient.dtype() == dtype);
      Comparison comparison =
          compareTensors(gradient.castTo(DType::F64), wideOutputs->at(name), toleranceFor(dtype));
      INFO(comparison.firstMismatchStr);
      CHECK(comparison.ok);
    }
  }
}

TEST_CASE("window gradient rules reject what has no gradient", "[window-gradients]") {
  Graph graph("bad");
  Value *x = *graph.addInput("x", TensorType{DType::I32, {1, 1, 4, 4}});
  Value *w = *graph.addInput("w", TensorType{DType::I32, {1, 1, 3, 3}});
  Value *y = *graph.addNode(OpKind::Conv2D, {x, w}, {{"accumulate", DType::I32}});
  Value *r = *graph.addInput("r", y->type());
  auto integer = gradientConv2D(graph, *y->definingNode(), r);
  REQUIRE_FALSE(integer.has_value());
  CHECK(integer.error().code() == ErrorCode::TypeMismatch);
  CHECK_THAT(integer.error().message(), Catch::Contains("conv2d") && Catch::Contains("i32"));

  Value *image = *graph.addInput("image", TensorType{DType::F32, {1, 1, 4, 4}});
  Value *pooled = *graph.addNode(
      OpKind::AvgPool2D, {image},
      {{"kernel", std::vector<int64_t>{2, 2}}, {"stride", std::vector<int64_t>{2, 2}}});
  Value *wrong = *graph.addInput("wrong", TensorType{DType::F32, {1, 1, 4, 4}});
  auto mismatched = gradientAvgPool2D(graph, *pooled->definingNode(), wrong);
  REQUIRE_FALSE(mismatched.has_value());
  CHECK_THAT(mismatched.error().message(),
             Catch::Contains("f32[1,1,4,4]") && Catch::Contains("f32[1,1,2,2]"));
}
