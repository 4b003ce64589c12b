// "split-concat": a concat wider than kMaxKernelInputs becomes a tree of
// concats, none wider than the bound, with the same result bit for bit
// (operands keep their order, sizes along the axis differ, the axis may be
// negative and operands may be empty); narrower concats are left alone.
#include "PassTestUtil.h"

#include "passes/graph/Fusion.h"
#include "passes/graph/GraphPasses.h"

#include <fmt/format.h>

#include <array>
#include <tuple>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;

namespace {

const Location kModelLine{"model.cpp", 7, 5};

/// A concat along `axis` of `count` inputs of shape [2, size_i, 3], where
/// size_i cycles through 1, 2, 0 and 3 (every fourth operand is empty).
Graph &buildConcat(Graph &graph, int count, int64_t axis) {
  std::vector<Value *> operands;
  for (int i = 0; i < count; ++i) {
    int64_t size = std::array<int64_t, 4>{1, 2, 0, 3}[i % 4];
    operands.push_back(*graph.addInput(fmt::format("x{}", i), tensorType(DType::F32, {2, size, 3})));
  }
  auto joined = graph.addNode(OpKind::Concat, operands, {{"axis", axis}}, kModelLine);
  REQUIRE(joined);
  REQUIRE(graph.addOutput("y", *joined));
  return graph;
}

/// The longest chain of concats from an input to the output.
int concatDepth(const Value *value) {
  const Node *node = value->definingNode();
  if (node == nullptr)
    return 0;
  int deepest = 0;
  for (const Value *operand : node->operands())
    deepest = std::max(deepest, concatDepth(operand));
  return deepest + 1;
}

} // namespace

TEST_CASE("split-concat: a wide concat becomes a tree within the input bound",
          "[passes][split-concat]") {
  static_assert(kMaxKernelInputs == 64, "the counts below assume a bound of 64");
  // 65 operands: one concat of 64 and the last, joined by a second. 64 * 64 + 1
  // need three levels: 64 concats (and the last operand), then 1, then the root.
  for (auto [count, axis, concats, depth] :
       {std::tuple{65, int64_t{1}, size_t{2}, 2}, std::tuple{200, int64_t{-2}, size_t{5}, 2},
        std::tuple{64 * 64 + 1, int64_t{1}, size_t{66}, 3}}) {
    INFO(count << " operands along axis " << axis);
    Graph graph("wide");
    buildConcat(graph, count, axis);
    ir::NamedTensors bindings = randomBindings(graph, 29 + count);
    ir::NamedTensors before = interpretOrFail(graph, bindings);

    CHECK(runPassOrFail(createSplitWideConcatPass(), graph));
    CHECK(countNodes(graph, OpKind::Concat) == concats);
    for (const Node *node : nodesOfKind(graph, OpKind::Concat)) {
      CHECK(node->numOperands() <= kMaxKernelInputs);
      CHECK(getInt(node->attrs(), "axis") == axis);
      CHECK(node->location().line == kModelLine.line); // errors still name the user's line
    }
    CHECK(concatDepth(graph.outputs()[0].value) == depth);
    requireSameOutputs(before, interpretOrFail(graph, bindings));
  }
}

TEST_CASE("split-concat: concats within the bound are left alone", "[passes][split-concat]") {
  Graph graph("narrow");
  buildConcat(graph, 64, 1);
  CHECK_FALSE(runPassOrFail(createSplitWideConcatPass(), graph));
  CHECK(countNodes(graph, OpKind::Concat) == 1);
}

TEST_CASE("split-concat: the tree's kernels stay within fusion's input bound",
          "[passes][split-concat]") {
  // 1,000 operands of a fused producer each: no group reads more than 64 values.
  Graph graph("fused");
  std::vector<Value *> operands;
  for (int i = 0; i < 1000; ++i)
    operands.push_back(
        node(graph, OpKind::Exp, {*graph.addInput(fmt::format("x{}", i), tensorType(DType::F32, {2}))}));
  REQUIRE(graph.addOutput("y", node(graph, OpKind::Concat, operands, {{"axis", int64_t{0}}})));
  REQUIRE(runPassOrFail(createSplitWideConcatPass(), graph));
  auto plan = planFusion(graph);
  REQUIRE(plan);
  for (const FusionGroup &group : plan->groups)
    CHECK(group.inputs.size() <= kMaxKernelInputs);
}
