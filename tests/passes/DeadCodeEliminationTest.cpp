// "dce": dead chains go, outputs and everything they need stay, parameters stay.
#include "PassTestUtil.h"

#include "passes/graph/GraphPasses.h"

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;

TEST_CASE("dce erases dead chains and keeps what outputs need", "[passes][dce]") {
  DType dtype = GENERATE(DType::F32, DType::F64);
  Graph graph("dce");
  Value *x = *graph.addInput("x", tensorType(dtype, {3, 5}));
  Value *w = *graph.addParam("w", tensorType(dtype, {5}));
  Value *unusedParam = *graph.addParam("unused", tensorType(dtype, {2}));
  Value *live = node(graph, OpKind::Add, {x, w});
  Value *out = node(graph, OpKind::Tanh, {live});
  // A dead chain of three nodes hanging off a live value, and a dead leaf node.
  Value *dead1 = node(graph, OpKind::Exp, {live});
  Value *dead2 = node(graph, OpKind::Mul, {dead1, x});
  node(graph, OpKind::ReduceSum, {dead2}, {{"axes", std::vector<int64_t>{1}}});
  node(graph, OpKind::Neg, {unusedParam});
  // A node used only as a second output stays.
  Value *second = node(graph, OpKind::Sigmoid, {x});
  REQUIRE(graph.addOutput("y", out));
  REQUIRE(graph.addOutput("z", second));

  NamedTensors bindings = randomBindings(graph, 11);
  NamedTensors before = interpretOrFail(graph, bindings);
  CHECK(runPassOrFail(createDeadCodeEliminationPass(), graph));
  CHECK(nodeKinds(graph) == std::vector<std::string>{"add", "tanh", "sigmoid"});
  CHECK(graph.params().size() == 2); // the model's interface is kept
  CHECK(w->uses().size() == 1);
  CHECK(x->uses().size() == 2);
  requireSameOutputs(before, interpretOrFail(graph, bindings));

  // A second run finds nothing to do.
  CHECK_FALSE(runPassOrFail(createDeadCodeEliminationPass(), graph));
}

TEST_CASE("dce keeps a graph whose every node is live", "[passes][dce]") {
  Graph graph;
  Value *x = *graph.addInput("x", tensorType(DType::F32, {7}));
  Value *a = node(graph, OpKind::Exp, {x});
  Value *b = node(graph, OpKind::Add, {a, a});
  REQUIRE(graph.addOutput("b", b));
  REQUIRE(graph.addOutput("a", a));
  CHECK_FALSE(runPassOrFail(createDeadCodeEliminationPass(), graph));
  CHECK(graph.numNodes() == 2);
}
