// "fold": constant expressions become constants with exactly the values the
// interpreter computes; large results, non-constant operands and failing
// references are left alone.
#include "PassTestUtil.h"

#include "passes/graph/GraphPasses.h"

#include <cmath>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;

namespace {

const std::vector<double> &constantValues(const Value *value) {
  REQUIRE(value->definingNode());
  REQUIRE(value->definingNode()->kind() == OpKind::Constant);
  return getFloats(value->definingNode()->attrs(), "value");
}

AttrMap iotaAttrs(DType dtype, Shape shape, int64_t axis) {
  return {{"axis", axis}, {"dtype", dtype}, {"shape", std::move(shape)}};
}

} // namespace

TEST_CASE("fold evaluates a constant expression in one run", "[passes][fold]") {
  DType dtype = GENERATE(DType::F32, DType::F64);
  Graph graph("fold");
  Value *x = *graph.addInput("x", tensorType(dtype, {2, 3}));
  Value *two = splat(graph, dtype, {}, 2.0);
  Value *iota = node(graph, OpKind::Iota, {}, iotaAttrs(dtype, {2, 3}, 1));
  Value *sum = node(graph, OpKind::Add, {iota, two});                       // [[2,3,4],[2,3,4]]
  Value *scaled = node(graph, OpKind::Mul, {sum, splat(graph, dtype, {}, 0.5)}); // [[1,1.5,2],...]
  Value *total = node(graph, OpKind::ReduceSum, {scaled}, {{"axes", std::vector<int64_t>{0, 1}}});
  Value *zero = node(graph, OpKind::Mul, {scaled, splat(graph, dtype, {2, 3}, 0.0)});
  Value *out = node(graph, OpKind::Add, {x, scaled});
  REQUIRE(graph.addOutput("out", out));
  REQUIRE(graph.addOutput("total", total));
  REQUIRE(graph.addOutput("zero", zero));

  NamedTensors bindings = randomBindings(graph, 3);
  NamedTensors before = interpretOrFail(graph, bindings);
  CHECK(runPassOrFail(createConstantFoldingPass(), graph));
  const Value *foldedScaled = out->definingNode()->operand(1);
  CHECK(constantValues(foldedScaled) == std::vector<double>{1, 1.5, 2, 1, 1.5, 2});
  CHECK(foldedScaled->type() == tensorType(dtype, {2, 3}));
  CHECK(constantValues(graph.outputs()[1].value) == std::vector<double>{9.0});
  // An all-equal result folds to a one-value splat.
  CHECK(constantValues(graph.outputs()[2].value) == std::vector<double>{0.0});
  CHECK(graph.outputs()[2].value->type() == tensorType(dtype, {2, 3}));
  // The add of the input stays; nothing else but constants remains live.
  CHECK(out->definingNode()->kind() == OpKind::Add);
  requireSameOutputs(before, interpretOrFail(graph, bindings));

  CHECK(runPassOrFail(createDeadCodeEliminationPass(), graph));
  CHECK(nodeKinds(graph) == std::vector<std::string>{"constant", "add", "constant", "constant"});
  CHECK_FALSE(runPassOrFail(createConstantFoldingPass(), graph));
}

TEST_CASE("fold rounds to the result dtype as the interpreter does", "[passes][fold]") {
  Graph graph;
  Value *c = splat(graph, DType::F32, {}, 0.1);
  Value *half = node(graph, OpKind::Cast, {c}, {{"dtype", DType::F16}});
  Value *integer = node(graph, OpKind::Cast, {splat(graph, DType::F64, {2}, -2.75)},
                        {{"dtype", DType::I32}});
  REQUIRE(graph.addOutput("half", half));
  REQUIRE(graph.addOutput("integer", integer));
  NamedTensors before = interpretOrFail(graph, {});
  CHECK(runPassOrFail(createConstantFoldingPass(), graph));
  // 0.1 rounds to f32 first (the constant's dtype), then to f16: 0x2E66.
  CHECK(constantValues(graph.outputs()[0].value) == std::vector<double>{0.0999755859375});
  CHECK(graph.outputs()[0].value->type().dtype == DType::F16);
  CHECK(constantValues(graph.outputs()[1].value) == std::vector<double>{-2.0});
  requireSameOutputs(before, interpretOrFail(graph, {}));
}

TEST_CASE("fold leaves large results and non-constant operands alone", "[passes][fold]") {
  Graph graph;
  Value *x = *graph.addInput("x", tensorType(DType::F32, {3}));
  Value *c = splat(graph, DType::F32, {1}, 3.0);
  Value *atLimit = node(graph, OpKind::BroadcastTo, {c}, {{"shape", Shape{256, 256}}});
  Value *overLimit = node(graph, OpKind::BroadcastTo, {c}, {{"shape", Shape{257, 256}}});
  Value *mixed = node(graph, OpKind::Add, {x, c});
  REQUIRE(graph.addOutput("at", atLimit));
  REQUIRE(graph.addOutput("over", overLimit));
  REQUIRE(graph.addOutput("mixed", mixed));
  static_assert(kMaxFoldedElements == 256 * 256);
  CHECK(runPassOrFail(createConstantFoldingPass(), graph));
  CHECK(constantValues(graph.outputs()[0].value) == std::vector<double>{3.0});
  CHECK(graph.outputs()[1].value == overLimit);
  CHECK(graph.outputs()[2].value == mixed);
}

TEST_CASE("fold folds a causal mask built from iotas", "[passes][fold]") {
  Graph graph;
  Value *row = node(graph, OpKind::Iota, {}, iotaAttrs(DType::I64, {3, 4}, 0));
  Value *col = node(graph, OpKind::Iota, {}, iotaAttrs(DType::I64, {3, 4}, 1));
  Value *visible = node(graph, OpKind::Le, {col, row});
  REQUIRE(graph.addOutput("mask", visible));
  CHECK(runPassOrFail(createConstantFoldingPass(), graph));
  CHECK(constantValues(graph.outputs()[0].value) ==
        std::vector<double>{1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0});
  CHECK(graph.outputs()[0].value->type() == tensorType(DType::Bool, {3, 4}));
  // The iotas themselves are not expanded into constants.
  CHECK(countNodes(graph, OpKind::Iota) == 2);
}

TEST_CASE("fold keeps a node whose reference fails at run time", "[passes][fold]") {
  Graph graph;
  Value *table = node(graph, OpKind::Iota, {}, iotaAttrs(DType::F32, {4, 2}, 0));
  Value *indices = node(graph, OpKind::Constant, {},
                        {{"dtype", DType::I64}, {"shape", Shape{2}}, {"value", std::vector<double>{1, 9}}});
  Value *gathered = node(graph, OpKind::Gather, {table, indices});
  REQUIRE(graph.addOutput("g", gathered));
  REQUIRE_FALSE(interpret(graph, {}));
  CHECK_FALSE(runPassOrFail(createConstantFoldingPass(), graph));
  CHECK(graph.outputs()[0].value == gathered);
}

TEST_CASE("fold produces NaN and infinity constants that verify", "[passes][fold]") {
  Graph graph;
  Value *logNegative = node(graph, OpKind::Log, {splat(graph, DType::F32, {2}, -1.0)});
  Value *logZero = node(graph, OpKind::Log, {splat(graph, DType::F32, {}, 0.0)});
  REQUIRE(graph.addOutput("nan", logNegative));
  REQUIRE(graph.addOutput("inf", logZero));
  CHECK(runPassOrFail(createConstantFoldingPass(), graph));
  REQUIRE(constantValues(graph.outputs()[0].value).size() == 1);
  CHECK(std::isnan(constantValues(graph.outputs()[0].value)[0]));
  CHECK(constantValues(graph.outputs()[1].value) ==
        std::vector<double>{-std::numeric_limits<double>::infinity()});
}

TEST_CASE("fold leaves a conv2d of splats that would take 4e10 steps", "[passes][fold]") {
  // The result (1x1x253x253) and both operands are under the element limits,
  // but the reference needs 253 * 253 * 768 * 768 ~ 3.8e10 multiply-adds:
  // before the work limit this ran for hours.
  Graph graph;
  Value *image = splat(graph, DType::F32, {1, 1, 1020, 1020}, 0.5);
  Value *filter = splat(graph, DType::F32, {1, 1, 768, 768}, 0.25);
  Value *conv = node(graph, OpKind::Conv2D, {image, filter});
  REQUIRE(conv->type() == tensorType(DType::F32, {1, 1, 253, 253}));
  REQUIRE(graph.addOutput("y", conv));
  CHECK(foldWorkEstimate(*conv->definingNode()) == 253.0 * 253.0 * 768.0 * 768.0);
  CHECK_FALSE(runPassOrFail(createConstantFoldingPass(), graph));
  CHECK(graph.outputs()[0].value == conv);
}

TEST_CASE("fold's work limit counts result elements times the reduction extent",
          "[passes][fold]") {
  // matmul [10, K] @ [K, 1000]: 10^4 result elements times K steps each.
  static_assert(kMaxFoldWork == 10'000'000);
  int64_t k = GENERATE(int64_t{1000}, int64_t{1001});
  INFO("K = " << k);
  Graph graph;
  Value *a = splat(graph, DType::F32, {10, k}, 0.5);
  Value *b = splat(graph, DType::F32, {k, 1000}, 2.0);
  Value *product = node(graph, OpKind::MatMul, {a, b});
  REQUIRE(graph.addOutput("y", product));
  CHECK(foldWorkEstimate(*product->definingNode()) == 10.0 * 1000.0 * static_cast<double>(k));
  bool folded = runPassOrFail(createConstantFoldingPass(), graph);
  CHECK(folded == (k == 1000));
  if (folded)
    CHECK(constantValues(graph.outputs()[0].value) == std::vector<double>{1000.0});
  else
    CHECK(graph.outputs()[0].value == product);
}

TEST_CASE("fold's work estimate per op kind", "[passes][fold]") {
  Graph graph;
  auto f32 = [&](Shape shape) { return splat(graph, DType::F32, std::move(shape), 1.0); };
  // transpose_a reads K from a's second-to-last axis.
  Value *matmulT = node(graph, OpKind::MatMul, {f32({7, 3}), f32({7, 5})}, {{"transpose_a", true}});
  CHECK(foldWorkEstimate(*matmulT->definingNode()) == 3.0 * 5.0 * 7.0);
  // Grouped conv: each output element reads I/groups * KH * KW filter values.
  Value *conv = node(graph, OpKind::Conv2D, {f32({1, 4, 6, 6}), f32({8, 2, 3, 3})},
                     {{"groups", int64_t{2}}});
  CHECK(foldWorkEstimate(*conv->definingNode()) == 8.0 * 4 * 4 * (2 * 3 * 3));
  Value *pool = node(graph, OpKind::MaxPool2D, {f32({1, 2, 6, 6})},
                     {{"kernel", std::vector<int64_t>{3, 2}}, {"stride", std::vector<int64_t>{1, 1}}});
  CHECK(foldWorkEstimate(*pool->definingNode()) == 2.0 * 4 * 5 * (3 * 2));
  // Attention: per query row, Lk scores of depth D and Lk value rows of depth Dv.
  Value *attention = node(graph, OpKind::ScaledDotProductAttention,
                          {f32({2, 3, 4}), f32({2, 5, 4}), f32({2, 5, 6})}, {{"scale", 0.5}});
  CHECK(foldWorkEstimate(*attention->definingNode()) == 2.0 * 3 * 5 * (4 + 6));
  // A reduction reads every input element; an elementwise op writes every result.
  Value *sum = node(graph, OpKind::ReduceSum, {f32({6, 7})}, {{"axes", std::vector<int64_t>{1}}});
  CHECK(foldWorkEstimate(*sum->definingNode()) == 42.0);
  Value *broadcast = node(graph, OpKind::Add, {f32({1, 7}), f32({6, 1})});
  CHECK(foldWorkEstimate(*broadcast->definingNode()) == 42.0);
}
