// Printing fusion plans: the listing names values exactly as ir::printGraph
// does, and the Graphviz picture has one cluster per group with a copy of a
// duplicated scalar in each group that reads it.
#include "FusionTestUtil.h"

#include "ir/graph/Printer.h"

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;

TEST_CASE("fusion listing uses the printed graph's value names", "[passes][fusion]") {
  // After a rewrite, creation order (ids) and topological order differ: the
  // printer numbers values in topological order, and so must the listing.
  Graph graph("renamed");
  Value *x = *graph.addInput("x", TensorType{DType::F32, {4}});
  Value *first = *graph.addNode(OpKind::Exp, {x});
  Value *second = *graph.addNode(OpKind::Neg, {first});
  Value *late = *graph.addNode(OpKind::Abs, {x});
  second->definingNode()->setOperand(0, late); // neg(abs(x)); exp is now dead
  REQUIRE(graph.addOutput("y", second));
  REQUIRE(printGraph(graph) == "graph @renamed {\n"
                               "  input %x: f32[4]\n"
                               "  %0: f32[4] = exp(%x)\n"
                               "  %1: f32[4] = abs(%x)\n"
                               "  %2: f32[4] = neg(%1)\n"
                               "  output \"y\" = %2\n"
                               "}\n");
  FusionPlan plan = planOrFail(graph);
  checkPlanInvariants(graph, plan);
  CHECK(printFusionPlan(graph, plan) ==
        "group 0 pointwise root=%0 nodes=[%0] inputs=[%x] ops=[exp]\n"
        "group 1 pointwise root=%2 nodes=[%1, %2] inputs=[%x] ops=[abs, neg]\n");
}

TEST_CASE("fusion plan as a Graphviz picture", "[passes][fusion]") {
  auto graph = parseOrFail(R"(graph @dot {
  input %x: f32[2,3]
  param %w: f32[3,2]
  %0: f32[] = constant() {dtype = f32, shape = [], value = [2.0]}
  %1: f32[2,3] = mul(%x, %0)
  %2: f32[2,2] = matmul(%1, %w)
  %3: f32[2,2] = add(%2, %0)
  output "y" = %3
  output "m" = %1
})");
  FusionPlan plan = planOrFail(*graph);
  checkPlanInvariants(*graph, plan);
  std::string dot = fusionPlanToDot(*graph, plan);
  CHECK(dot == R"(digraph "fusion dot" {
  node [shape=box, fontname="monospace"];
  leaf0 [shape=ellipse, label="%x: f32[2,3]"];
  leaf1 [shape=ellipse, label="%w: f32[3,2]"];
  subgraph cluster_0 {
    label="group 0 pointwise";
    g0_0 [label="%0 = constant"];
    g0_1 [label="%1 = mul", style=bold];
  }
  subgraph cluster_1 {
    label="group 1 contraction";
    g1_0 [label="%0 = constant"];
    g1_2 [label="%2 = matmul", style=filled, fillcolor=lightgrey];
    g1_3 [label="%3 = add", style=bold];
  }
  leaf0 -> g0_1;
  g0_0 -> g0_1;
  g0_1 -> g1_2;
  leaf1 -> g1_2;
  g1_2 -> g1_3;
  g1_0 -> g1_3;
  out0 [shape=ellipse, label="output y"];
  g1_3 -> out0;
  out1 [shape=ellipse, label="output m"];
  g0_1 -> out1;
}
)");
  // The same graph planned again draws the same picture.
  CHECK(fusionPlanToDot(*graph, planOrFail(*graph)) == dot);
}

TEST_CASE("fusion picture quotes names Graphviz would misread", "[passes][fusion]") {
  Graph graph("a \"quoted\" \\ name");
  Value *x = *graph.addInput("x", TensorType{DType::F32, {2}});
  REQUIRE(graph.addOutput("say \"hi\"", *graph.addNode(OpKind::Neg, {x})));
  std::string dot = fusionPlanToDot(graph, planOrFail(graph));
  CHECK(dot.starts_with("digraph \"fusion a \\\"quoted\\\" \\\\ name\" {\n"));
  CHECK(dot.find("label=\"output say \\\"hi\\\"\"") != std::string::npos);
}
