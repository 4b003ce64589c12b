// "decompose": every composite op's decomposition matches the op's own
// reference on random inputs at odd sizes in every float dtype, uses only
// primitive ops, and keeps the node's location; a limited pass leaves the other
// composites alone; empty tensors decompose to themselves.
//
// Tolerances, |decomposed - fused| <= tol * max(1, |fused|): f64 1e-12 (only
// the order of fp64 operations differs; observed < 1e-15); f32 1e-5 (each
// primitive rounds to f32; observed about 2e-7, in layer norm). f16, bf16 and
// the f8s compute in f32 and round once, like the fp64 reference: the f32
// result is within about 1e-6 of the exact one, far less than half an ulp of
// the narrow dtype, so the decomposed result is the reference's or, when the
// exact value lies that close to a rounding midpoint, its neighbour: at most
// 1 ulp apart. So tol is 1 ulp at 1 (the dtype's epsilon), which is at least
// 1 ulp at every |value| once scaled by max(1, |value|): f16 2^-10, bf16 2^-7,
// f8e4m3 2^-3, f8e5m2 2^-2.
#include "PassTestUtil.h"

#include "passes/graph/GraphPasses.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;

namespace {

double toleranceFor(DType dtype) {
  switch (dtype) {
  case DType::F64: return 1e-12;
  case DType::F32: return 1e-5;
  case DType::F16: return std::ldexp(1.0, -10);
  case DType::BF16: return std::ldexp(1.0, -7);
  case DType::F8E4M3: return std::ldexp(1.0, -3);
  case DType::F8E5M2: return std::ldexp(1.0, -2);
  default: FAIL("composite ops take only float dtypes, not " << dtypeName(dtype)); return 0;
  }
}

bool isNarrowFloat(DType dtype) { return dtype != DType::F64 && dtype != DType::F32; }

const Location kModelLine{"model.cpp", 42, 3};

/// Adds one composite node over fresh inputs named a, b, c, ... and makes it
/// the output.
Value *addComposite(Graph &graph, OpKind kind, DType dtype, std::vector<Shape> shapes,
                    AttrMap attrs) {
  std::vector<Value *> operands;
  for (size_t i = 0; i < shapes.size(); ++i)
    operands.push_back(*graph.addInput(std::string(1, static_cast<char>('a' + i)),
                                       tensorType(dtype, shapes[i])));
  auto value = graph.addNode(kind, operands, std::move(attrs), kModelLine);
  if (!value)
    FAIL("cannot build " << opName(kind) << ": " << value.error().str());
  REQUIRE(graph.addOutput("out", *value));
  return *value;
}

/// How a decomposition's primitives are typed.
enum class Compute {
  Own,    ///< in the node's dtype (global_avg_pool: reduce_mean rounds once anyway)
  Widened ///< in f64 for f64, else in f32 between casts of the operands and the result
};

/// Decomposes the graph's single composite node and compares the outputs with
/// the fused op's reference on two random draws. `fixBindings` adjusts inputs
/// that must satisfy a precondition (a positive variance).
void checkDecomposition(Graph &graph, DType dtype, Compute compute = Compute::Widened,
                        const std::function<void(NamedTensors &, Rng &)> &fixBindings = {}) {
  std::vector<NamedTensors> draws;
  std::vector<NamedTensors> expected;
  for (uint64_t seed : {101u, 202u}) {
    NamedTensors bindings = randomBindings(graph, seed);
    if (fixBindings) {
      Rng rng(seed + 1);
      fixBindings(bindings, rng);
    }
    expected.push_back(interpretOrFail(graph, bindings));
    draws.push_back(std::move(bindings));
  }
  CHECK(runPassOrFail(createDecomposePass(), graph));
  bool widened = compute == Compute::Widened && isNarrowFloat(dtype);
  DType computeDType = widened ? DType::F32 : dtype;
  for (const Node *node : graph.nodes()) {
    INFO("node " << node->name() << ": " << node->type().str());
    CHECK(node->info().decompose == nullptr);
    CHECK(node->location().str() == kModelLine.str());
    // Every float primitive computes in the compute dtype; only the casts
    // into and out of it touch the node's own dtype.
    if (node->kind() != OpKind::Cast && isFloatingPoint(node->type().dtype))
      CHECK(node->type().dtype == computeDType);
    if (node->kind() == OpKind::MatMul)
      CHECK(getType(node->attrs(), "accumulate") == computeDType);
  }
  // One cast per operand on the way in, one for the result on the way out.
  CHECK(countNodes(graph, OpKind::Cast) == (widened ? graph.inputs().size() + 1 : 0u));
  if (widened) {
    const Node *last = graph.outputs()[0].value->definingNode();
    REQUIRE(last);
    CHECK(last->kind() == OpKind::Cast);
    CHECK(last->type().dtype == dtype);
  }
  for (size_t i = 0; i < draws.size(); ++i)
    requireCloseOutputs(expected[i], interpretOrFail(graph, draws[i]), toleranceFor(dtype));
}

/// Node kinds in topological order without the casts into and out of f32.
std::vector<std::string> computeKinds(const Graph &graph) {
  std::vector<std::string> kinds = nodeKinds(graph);
  std::erase(kinds, std::string("cast"));
  return kinds;
}

} // namespace

TEST_CASE("decompose global_avg_pool", "[passes][decompose]") {
  DType dtype = GENERATE(DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8E4M3,
                         DType::F8E5M2);
  std::string layout = GENERATE(std::string("nchw"), std::string("nhwc"));
  INFO(dtypeName(dtype) << " " << layout);
  Graph graph;
  Shape shape = layout == "nchw" ? Shape{2, 3, 5, 7} : Shape{2, 5, 7, 3};
  addComposite(graph, OpKind::GlobalAvgPool, dtype, {shape}, {{"layout", layout}});
  checkDecomposition(graph, dtype, Compute::Own);
  REQUIRE(nodeKinds(graph) == std::vector<std::string>{"reduce_mean"});
  const Node *mean = graph.outputs()[0].value->definingNode();
  CHECK(getInts(mean->attrs(), "axes") ==
        (layout == "nchw" ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{1, 2}));
  CHECK(getBool(mean->attrs(), "keepdims"));
}

TEST_CASE("decompose softmax and log_softmax", "[passes][decompose]") {
  DType dtype = GENERATE(DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8E4M3,
                         DType::F8E5M2);
  int64_t axis = GENERATE(int64_t{-1}, int64_t{0}, int64_t{1});
  bool logarithm = GENERATE(false, true);
  INFO(dtypeName(dtype) << " axis " << axis << (logarithm ? " log_softmax" : " softmax"));
  Graph graph;
  addComposite(graph, logarithm ? OpKind::LogSoftmax : OpKind::Softmax, dtype, {{3, 7, 5}},
               {{"axis", axis}});
  checkDecomposition(graph, dtype);
  if (logarithm)
    CHECK(computeKinds(graph) == std::vector<std::string>{"reduce_max", "sub", "exp",
                                                          "reduce_sum", "log", "sub"});
  else
    CHECK(computeKinds(graph) ==
          std::vector<std::string>{"reduce_max", "sub", "exp", "reduce_sum", "div"});
  for (const Node *node : graph.nodes())
    if (node->kind() == OpKind::ReduceMax)
      CHECK(getInts(node->attrs(), "axes") == std::vector<int64_t>{axis < 0 ? 2 : axis});
}

TEST_CASE("decompose softmax keeps large inputs finite", "[passes][decompose]") {
  // Without subtracting the maximum, exp(800) overflows to inf and the
  // result is NaN.
  Graph graph;
  addComposite(graph, OpKind::Softmax, DType::F64, {{2, 3}}, {});
  checkDecomposition(graph, DType::F64, Compute::Widened, [](NamedTensors &bindings, Rng &) {
    bindings["a"] = HostTensor::fromDoubles(DType::F64, {2, 3},
                                            std::vector<double>{800, 801, 799, -5, 0, 5});
  });
  NamedTensors out = interpretOrFail(
      graph, {{"a", HostTensor::fromDoubles(DType::F64, {2, 3},
                                            std::vector<double>{800, 801, 799, -5, 0, 5})}});
  double sum = 0;
  for (int i = 0; i < 3; ++i)
    sum += out["out"].getDouble(i);
  CHECK(sum == Approx(1.0).epsilon(1e-15));
}

TEST_CASE("decompose layer_norm", "[passes][decompose]") {
  DType dtype = GENERATE(DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8E4M3,
                         DType::F8E5M2);
  int64_t axis = GENERATE(int64_t{-1}, int64_t{1}, int64_t{0});
  double epsilon = GENERATE(1e-5, 0.25);
  INFO(dtypeName(dtype) << " axis " << axis << " epsilon " << epsilon);
  Shape x{3, 5, 7};
  Shape normalized(x.begin() + (axis < 0 ? 2 : axis), x.end());
  Graph graph;
  addComposite(graph, OpKind::LayerNorm, dtype, {x, normalized, normalized},
               {{"axis", axis}, {"epsilon", epsilon}});
  checkDecomposition(graph, dtype);
  CHECK(countNodes(graph, OpKind::ReduceMean) == 2);
  CHECK(countNodes(graph, OpKind::Rsqrt) == 1);
  std::vector<int64_t> axes;
  for (int64_t a = axis < 0 ? 2 : axis; a < 3; ++a)
    axes.push_back(a);
  for (const Node *node : graph.nodes())
    if (node->kind() == OpKind::ReduceMean)
      CHECK(getInts(node->attrs(), "axes") == axes);
}

TEST_CASE("decompose batch_norm", "[passes][decompose]") {
  DType dtype = GENERATE(DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8E4M3,
                         DType::F8E5M2);
  struct Case {
    Shape x;
    int64_t axis;
    size_t reshapes;
  };
  Case c = GENERATE(Case{{2, 3, 5, 7}, 1, 3}, Case{{2, 5, 7, 3}, 3, 0}, Case{{5, 3}, 1, 0},
                    Case{{2, 5, 7, 3}, -1, 0}, Case{{3, 5, 2}, 0, 3});
  INFO(dtypeName(dtype) << " x " << shapeStr(c.x) << " axis " << c.axis);
  int64_t channels = c.x[static_cast<size_t>(c.axis < 0 ? c.axis + 4 : c.axis)];
  Graph graph;
  addComposite(graph, OpKind::BatchNorm, dtype,
               {c.x, {channels}, {channels}, {channels}, {channels}},
               {{"axis", c.axis}, {"epsilon", 1e-3}});
  checkDecomposition(graph, dtype, Compute::Widened, [&](NamedTensors &bindings, Rng &rng) {
    bindings["e"] = HostTensor::randomUniform(dtype, {channels}, rng, 0.1, 2.0); // variance > 0
  });
  CHECK(countNodes(graph, OpKind::Reshape) == c.reshapes);
  CHECK(countNodes(graph, OpKind::Rsqrt) == 1);
  // The per-channel factor is computed on [C], not on the whole tensor.
  for (const Node *node : graph.nodes())
    if (node->kind() == OpKind::Rsqrt)
      CHECK(node->type().shape == Shape{channels});
}

TEST_CASE("decompose scaled_dot_product_attention", "[passes][decompose]") {
  DType dtype = GENERATE(DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8E4M3,
                         DType::F8E5M2);
  bool causal = GENERATE(false, true);
  struct Case {
    Shape q, k, v;
  };
  Case c = GENERATE(Case{{2, 5, 3}, {2, 7, 3}, {2, 7, 4}},      // more keys than queries
                    Case{{2, 7, 3}, {2, 5, 3}, {2, 5, 4}},      // fewer (not causal: see below)
                    Case{{2, 3, 5, 4}, {3, 6, 4}, {1, 6, 5}},   // broadcast batch dims
                    Case{{1, 1, 9}, {1, 1, 9}, {1, 1, 1}},      // a single key
                    Case{{3, 0}, {4, 0}, {4, 2}},               // D = 0: every score is 0
                    Case{{2, 0, 3}, {2, 4, 3}, {2, 4, 2}});     // no queries: an empty result
  // Causal attention needs Lk >= Lq, so every query sees at least one key:
  // the op itself rejects fewer keys, and there is nothing to decompose.
  if (causal && c.q[c.q.size() - 2] > c.k[c.k.size() - 2]) {
    Graph rejected;
    std::vector<Value *> operands;
    for (const Shape *shape : {&c.q, &c.k, &c.v})
      operands.push_back(*rejected.addInput("x" + std::to_string(operands.size()),
                                            tensorType(dtype, *shape)));
    CHECK_FALSE(rejected.addNode(OpKind::ScaledDotProductAttention, operands,
                                 {{"causal", true}, {"scale", 1.0}}));
    return;
  }
  INFO(dtypeName(dtype) << (causal ? " causal" : "") << " q " << shapeStr(c.q) << " k "
                        << shapeStr(c.k) << " v " << shapeStr(c.v));
  Graph graph;
  double scale = c.q.back() == 0 ? 1.0 : 1.0 / std::sqrt(static_cast<double>(c.q.back()));
  addComposite(graph, OpKind::ScaledDotProductAttention, dtype, {c.q, c.k, c.v},
               {{"causal", causal}, {"scale", scale}});
  checkDecomposition(graph, dtype);
  CHECK(countNodes(graph, OpKind::MatMul) == 2);
  CHECK(countNodes(graph, OpKind::Exp) == 1);
  // The mask selects twice: the lowest finite score for the row maximum, and
  // an exact 0 after exp.
  CHECK(countNodes(graph, OpKind::Where) == (causal ? 2u : 0u));
  CHECK(countNodes(graph, OpKind::Iota) == (causal ? 2u : 0u));
}

TEST_CASE("a limited decompose pass leaves other composites alone", "[passes][decompose]") {
  Graph graph;
  Value *x = *graph.addInput("x", tensorType(DType::F32, {4, 6}));
  Value *scale = *graph.addParam("scale", tensorType(DType::F32, {6}));
  Value *bias = *graph.addParam("bias", tensorType(DType::F32, {6}));
  Value *norm = node(graph, OpKind::LayerNorm, {x, scale, bias});
  REQUIRE(graph.addOutput("y", node(graph, OpKind::Softmax, {norm})));
  NamedTensors bindings = randomBindings(graph, 4);
  NamedTensors before = interpretOrFail(graph, bindings);
  CHECK(runPassOrFail(createDecomposePass({OpKind::Softmax}), graph));
  CHECK(countNodes(graph, OpKind::LayerNorm) == 1);
  CHECK(countNodes(graph, OpKind::Softmax) == 0);
  CHECK(countNodes(graph, OpKind::Exp) == 1);
  requireCloseOutputs(before, interpretOrFail(graph, bindings), 1e-5);
  CHECK_FALSE(runPassOrFail(createDecomposePass({OpKind::Softmax}), graph));
  CHECK(runPassOrFail(createDecomposePass(), graph));
  CHECK(countNodes(graph, OpKind::LayerNorm) == 0);
  requireCloseOutputs(before, interpretOrFail(graph, bindings), 1e-5);
}

TEST_CASE("decompose layer_norm of a constant row in narrow floats", "[passes][decompose]") {
  // The variance is exactly 0, so the result is the bias. In f8 an epsilon of
  // 1e-5 rounds to 0, so computing in the node's dtype gave 0 * rsqrt(0) =
  // NaN; in f32 the epsilon survives.
  DType dtype = GENERATE(DType::F16, DType::BF16, DType::F8E4M3, DType::F8E5M2);
  INFO(dtypeName(dtype));
  REQUIRE(roundToDType(1e-5, DType::F8E4M3) == 0.0);
  Graph graph;
  addComposite(graph, OpKind::LayerNorm, dtype, {{2, 4}, {4}, {4}}, {{"epsilon", 1e-5}});
  NamedTensors bindings{
      {"a", HostTensor::fromDoubles(dtype, {2, 4}, std::vector<double>{1.5, 1.5, 1.5, 1.5, -2, -2, -2, -2})},
      {"b", HostTensor::fromDoubles(dtype, {4}, std::vector<double>{1, -1, 0.5, 2})},
      {"c", HostTensor::fromDoubles(dtype, {4}, std::vector<double>{0.25, -0.5, 1, -1.5})}};
  NamedTensors expected = interpretOrFail(graph, bindings);
  CHECK(runPassOrFail(createDecomposePass(), graph));
  NamedTensors got = interpretOrFail(graph, bindings);
  requireSameOutputs(expected, got);
  for (int64_t i = 0; i < 8; ++i)
    CHECK(got["out"].getDouble(i) == bindings["c"].getDouble(i % 4));
}

TEST_CASE("decomposed causal attention masks exactly, without infinities", "[passes][decompose]") {
  // Lq = Lk = 2, D = 1: query 0 sees key 0 only, query 1 sees both.
  DType dtype = GENERATE(DType::F64, DType::F32, DType::F16, DType::F8E4M3);
  INFO(dtypeName(dtype));
  double inf = std::numeric_limits<double>::infinity();
  auto run = [&](std::vector<double> q, std::vector<double> k) {
    Graph graph;
    addComposite(graph, OpKind::ScaledDotProductAttention, dtype, {{2, 1}, {2, 1}, {2, 1}},
                 {{"causal", true}, {"scale", 1.0}});
    NamedTensors bindings{{"a", HostTensor::fromDoubles(dtype, {2, 1}, q)},
                          {"b", HostTensor::fromDoubles(dtype, {2, 1}, k)},
                          {"c", HostTensor::fromDoubles(dtype, {2, 1}, std::vector<double>{3, -1})}};
    NamedTensors expected = interpretOrFail(graph, bindings);
    REQUIRE(runPassOrFail(createDecomposePass(), graph));
    NamedTensors got = interpretOrFail(graph, bindings);
    requireSameOutputs(expected, got);
    return std::pair{got["out"].getDouble(0), got["out"].getDouble(1)};
  };
  SECTION("a hidden key's score does not matter, even when it is huge") {
    // A softmax taking its row maximum over hidden keys too would underflow
    // query 0's only visible exponential to 0 and give 0 / 0.
    double huge = dtype == DType::F8E4M3 ? 448 : dtype == DType::F16 ? 60000 : 1e30;
    auto [first, second] = run({1, 1}, {1, huge});
    CHECK(first == 3.0); // query 0 sees only key 0: its value exactly
    CHECK(second == -1.0); // query 1: key 1's score dominates
  }
  // f8e4m3 has no -inf to feed in, so this section exists for the other dtypes only.
  if (dtype != DType::F8E4M3) {
    SECTION("a row whose visible scores are all -inf is NaN, as in the reference") {
      auto [first, second] = run({-inf, 1}, {1, 1});
      CHECK(std::isnan(first));
      CHECK(second == (3.0 + -1.0) / 2);
    }
  }
}

TEST_CASE("decompose leaves an empty tensor as it is", "[passes][decompose]") {
  // softmax of f32[3,0] has an empty axis (reduce_max cannot reduce it); the
  // result is empty either way, so every normalization decomposes to its input.
  DType dtype = GENERATE(DType::F32, DType::BF16);
  INFO(dtypeName(dtype));
  Graph graph;
  Value *x = *graph.addInput("x", tensorType(dtype, {3, 0}));
  Value *rows = *graph.addInput("rows", tensorType(dtype, {0, 4}));
  Value *empty = *graph.addParam("empty", tensorType(dtype, {0}));
  Value *four = *graph.addParam("four", tensorType(dtype, {4}));
  REQUIRE(graph.addOutput("softmax", node(graph, OpKind::Softmax, {x})));
  REQUIRE(graph.addOutput("log_softmax", node(graph, OpKind::LogSoftmax, {x}, {{"axis", int64_t{1}}})));
  REQUIRE(graph.addOutput("softmax_rows", node(graph, OpKind::Softmax, {rows})));
  REQUIRE(graph.addOutput("layer_norm", node(graph, OpKind::LayerNorm, {x, empty, empty})));
  REQUIRE(graph.addOutput("batch_norm", node(graph, OpKind::BatchNorm, {rows, four, four, four, four})));
  NamedTensors bindings = randomBindings(graph, 5);
  NamedTensors before = interpretOrFail(graph, bindings);
  CHECK(runPassOrFail(createDecomposePass(), graph));
  CHECK(graph.numNodes() == 0);
  CHECK(graph.outputs()[0].value == x);
  CHECK(graph.outputs()[1].value == x);
  CHECK(graph.outputs()[2].value == rows);
  CHECK(graph.outputs()[3].value == x);
  CHECK(graph.outputs()[4].value == rows);
  requireSameOutputs(before, interpretOrFail(graph, bindings));
}
