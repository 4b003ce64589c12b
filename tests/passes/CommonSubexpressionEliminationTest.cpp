// "cse": equal computations merge (transitively, earliest survives); any
// difference in op, operand order, attribute or type keeps nodes apart.
#include "PassTestUtil.h"

#include "passes/graph/GraphPasses.h"

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;

TEST_CASE("cse merges equal nodes and then their users", "[passes][cse]") {
  DType dtype = GENERATE(DType::F32, DType::F64);
  Graph graph("cse");
  Value *x = *graph.addInput("x", tensorType(dtype, {3, 7}));
  Value *y = *graph.addInput("y", tensorType(dtype, {7}));
  Value *e1 = node(graph, OpKind::Exp, {x});
  Value *e2 = node(graph, OpKind::Exp, {x});
  Value *s1 = node(graph, OpKind::Add, {e1, y}); // equal once e2 becomes e1
  Value *s2 = node(graph, OpKind::Add, {e2, y});
  Value *r1 = node(graph, OpKind::ReduceSum, {s1}, {{"axes", std::vector<int64_t>{1}}});
  Value *r2 = node(graph, OpKind::ReduceSum, {s2}, {{"axes", std::vector<int64_t>{1}}});
  Value *out = node(graph, OpKind::Mul, {r1, r2});
  REQUIRE(graph.addOutput("out", out));
  REQUIRE(graph.addOutput("s2", s2)); // an output renamed to the survivor

  NamedTensors bindings = randomBindings(graph, 5);
  NamedTensors before = interpretOrFail(graph, bindings);
  CHECK(runPassOrFail(createCommonSubexpressionEliminationPass(), graph));
  CHECK(nodeKinds(graph) == std::vector<std::string>{"exp", "add", "reduce_sum", "mul"});
  // The earliest node survives.
  CHECK(graph.outputs()[1].value == s1);
  CHECK(out->definingNode()->operand(0) == r1);
  CHECK(out->definingNode()->operand(1) == r1);
  requireSameOutputs(before, interpretOrFail(graph, bindings));
}

TEST_CASE("cse keeps nodes that differ", "[passes][cse]") {
  Graph graph;
  Value *x = *graph.addInput("x", tensorType(DType::F32, {4, 4}));
  Value *y = *graph.addInput("y", tensorType(DType::F32, {4, 4}));
  std::vector<Value *> keep = {
      node(graph, OpKind::Sub, {x, y}),
      node(graph, OpKind::Sub, {y, x}), // operand order matters
      node(graph, OpKind::ReduceSum, {x}, {{"axes", std::vector<int64_t>{0}}}),
      node(graph, OpKind::ReduceSum, {x}, {{"axes", std::vector<int64_t>{1}}}),
      node(graph, OpKind::ReduceSum, {x}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", true}}),
      node(graph, OpKind::Cast, {x}, {{"dtype", DType::F16}}),
      node(graph, OpKind::Cast, {x}, {{"dtype", DType::BF16}}),
      splat(graph, DType::F32, {}, 0.0),
      splat(graph, DType::F32, {}, -0.0), // a different bit pattern is a different constant
      splat(graph, DType::F32, {2}, 0.0), // a different type
      splat(graph, DType::F64, {}, 0.0),
  };
  for (size_t i = 0; i < keep.size(); ++i)
    REQUIRE(graph.addOutput("o" + std::to_string(i), keep[i]));
  CHECK_FALSE(runPassOrFail(createCommonSubexpressionEliminationPass(), graph));
  CHECK(graph.numNodes() == keep.size());
}

TEST_CASE("cse merges equal constants and equal attribute sets", "[passes][cse]") {
  Graph graph;
  Value *x = *graph.addInput("x", tensorType(DType::F32, {2, 3}));
  Value *c1 = splat(graph, DType::F32, {}, 0.5);
  Value *c2 = splat(graph, DType::F32, {}, 0.5);
  Value *t1 = node(graph, OpKind::Transpose, {x}, {{"perm", std::vector<int64_t>{1, 0}}});
  Value *t2 = node(graph, OpKind::Transpose, {x}, {{"perm", std::vector<int64_t>{1, 0}}});
  Value *a = node(graph, OpKind::Mul, {t1, c1});
  Value *b = node(graph, OpKind::Mul, {t2, c2});
  REQUIRE(graph.addOutput("out", node(graph, OpKind::Sub, {a, b})));
  NamedTensors bindings = randomBindings(graph, 9);
  NamedTensors before = interpretOrFail(graph, bindings);
  CHECK(runPassOrFail(createCommonSubexpressionEliminationPass(), graph));
  CHECK(nodeKinds(graph) == std::vector<std::string>{"constant", "transpose", "mul", "sub"});
  requireSameOutputs(before, interpretOrFail(graph, bindings));
}
