// Graph construction, use lists, rewriting, topological order and the verifier.
#include "ir/graph/Graph.h"
#include "ir/graph/Verifier.h"

#include <catch2/catch.hpp>

using namespace kiln;
using namespace kiln::ir;

namespace {
TensorType f32(Shape shape) { return TensorType{DType::F32, std::move(shape)}; }
} // namespace

TEST_CASE("nodes record uses and infer types", "[graph]") {
  Graph graph("g");
  Value *x = *graph.addInput("x", f32({2, 3}));
  Value *w = *graph.addParam("layer.weight", f32({3}));
  Value *sum = *graph.addNode(OpKind::Add, {x, w});
  Value *out = *graph.addNode(OpKind::Relu, {sum});
  REQUIRE(graph.addOutput("y", out));
  CHECK(sum->type() == f32({2, 3}));
  REQUIRE(x->uses().size() == 1);
  CHECK(x->uses()[0] == Use{sum->definingNode(), 0});
  CHECK(w->uses()[0] == Use{sum->definingNode(), 1});
  CHECK(verifyGraph(graph));
}

TEST_CASE("names are checked", "[graph]") {
  Graph graph;
  REQUIRE(graph.addInput("x", f32({1})));
  auto duplicate = graph.addParam("x", f32({1}));
  REQUIRE_FALSE(duplicate);
  CHECK(duplicate.error().message() ==
        "parameter name 'x' is already used by an input or parameter");
  auto bad = graph.addInput("1x", f32({1}));
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message(), Catch::Contains("not an identifier"));
  REQUIRE(graph.addOutput("y", graph.findInput("x")));
  CHECK_FALSE(graph.addOutput("y", graph.findInput("x")));
  auto huge = graph.addInput("huge", f32({int64_t{1} << 40, int64_t{1} << 20}));
  REQUIRE_FALSE(huge);
  CHECK(huge.error().message() ==
        "input 'huge' has more than 2^53 elements (zero-size dims aside): "
        "f32[1099511627776,1048576]");
}

TEST_CASE("addNode errors carry the location and the operand types", "[graph]") {
  Graph graph;
  Value *a = *graph.addInput("a", f32({2, 3}));
  Value *b = *graph.addInput("b", f32({4, 5}));
  auto bad = graph.addNode(OpKind::MatMul, {a, b}, {}, Location{"model.cpp", 42, 7});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().str() ==
        "model.cpp:42:7: matmul: contraction dims differ: a f32[2,3] has K = 3, b f32[4,5] has "
        "K = 4\n  note: matmul operand types: (f32[2,3], f32[4,5])");
  CHECK(graph.numNodes() == 0);
}

TEST_CASE("replaceAllUsesWith, eraseNode and a stable topological order", "[graph]") {
  Graph graph;
  Value *x = *graph.addInput("x", f32({4}));
  Value *a = *graph.addNode(OpKind::Exp, {x});
  Value *b = *graph.addNode(OpKind::Neg, {a});
  Value *c = *graph.addNode(OpKind::Add, {b, a});
  REQUIRE(graph.addOutput("out", c));
  REQUIRE(graph.addOutput("alias", b));

  // A replacement created after its users: creation order is no longer topological.
  Value *late = *graph.addNode(OpKind::Tanh, {x});
  graph.replaceAllUsesWith(a, late);
  CHECK_FALSE(a->hasUses());
  CHECK(late->uses().size() == 2);
  graph.eraseNode(a->definingNode());
  std::vector<Node *> order = graph.topologicalOrder();
  REQUIRE(order.size() == 3);
  CHECK(order[0] == late->definingNode());
  CHECK(order[1] == b->definingNode());
  CHECK(order[2] == c->definingNode());
  CHECK(verifyGraph(graph));

  graph.replaceAllUsesWith(b, late);
  CHECK(graph.outputs()[1].value == late);
}

TEST_CASE("the verifier catches broken invariants", "[graph]") {
  Graph graph;
  Value *x = *graph.addInput("x", f32({4}));
  Value *y = *graph.addInput("y", f32({5}));
  Value *e = *graph.addNode(OpKind::Exp, {x}, {}, Location{"net.kir", 3, 3});
  auto noOutputs = verifyGraph(graph);
  REQUIRE_FALSE(noOutputs);
  CHECK(noOutputs.error().message() == "the graph has no outputs");
  REQUIRE(graph.addOutput("out", e));

  // Changing an operand to one of another shape leaves a stale result type.
  e->definingNode()->setOperand(0, y);
  auto stale = verifyGraph(graph);
  REQUIRE_FALSE(stale);
  CHECK(stale.error().str() ==
        "net.kir:3:3: exp (node #0): result type is f32[4] but the operands give f32[5]");

  // A cycle: a node that uses its own result.
  e->definingNode()->setOperand(0, x);
  Value *n = *graph.addNode(OpKind::Neg, {x});
  Value *m = *graph.addNode(OpKind::Neg, {n});
  n->definingNode()->setOperand(0, m);
  auto cycle = verifyGraph(graph);
  REQUIRE_FALSE(cycle);
  CHECK(cycle.error().message() == "the graph has a cycle");
}
