// Composite elementwise ops (ir::isCompositeElementwise: relu6, hard_sigmoid, ...) in the
// graph passes: the pipeline's decompose step (createDecomposePass(opsWithoutKernels()))
// leaves none of them, only primitives at the node's location, and the same values bit for
// bit as the interpreter gives the composite node (which runs the same decomposition); fusion
// refuses one that was not decomposed; constant folding evaluates one like the interpreter.
#include "PassTestUtil.h"

#include "passes/graph/Fusion.h"
#include "passes/graph/GraphPasses.h"

#include <algorithm>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;

namespace {

const Location kModelLine{"model.cpp", 7, 5};

std::vector<OpKind> compositeElementwiseOps() {
  std::vector<OpKind> kinds;
  for (const OpInfo &info : allOps())
    if (isCompositeElementwise(info))
      kinds.push_back(info.kind);
  return kinds;
}

bool contains(const std::vector<OpKind> &kinds, OpKind kind) {
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

} // namespace

TEST_CASE("the ops without kernels are attention and every composite elementwise op",
          "[decompose][composite]") {
  std::vector<OpKind> composites = compositeElementwiseOps();
  CHECK(composites.size() >= 7);
  std::vector<OpKind> withoutKernels = opsWithoutKernels();
  CHECK(withoutKernels.size() == composites.size() + 1);
  CHECK(contains(withoutKernels, OpKind::ScaledDotProductAttention));
  for (OpKind kind : composites) {
    INFO(opName(kind));
    CHECK(contains(withoutKernels, kind));
  }
  // Composites with kernels of their own stay whole until fusion.
  for (OpKind kind : {OpKind::Softmax, OpKind::LogSoftmax, OpKind::LayerNorm, OpKind::BatchNorm,
                      OpKind::GlobalAvgPool}) {
    INFO(opName(kind));
    CHECK_FALSE(contains(withoutKernels, kind));
  }
}

TEST_CASE("the pipeline's decompose step turns every composite elementwise op into primitives "
          "that compute what the interpreter computed",
          "[decompose][composite]") {
  for (OpKind kind : compositeElementwiseOps()) {
    for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
      INFO(opName(kind) << " " << dtypeName(dtype));
      Graph graph("composite");
      Value *x = *graph.addInput("x", tensorType(dtype, {3, 7}));
      auto y = graph.addNode(kind, {x}, {}, kModelLine);
      REQUIRE(y);
      // A softmax beside it has a kernel, so it stays.
      auto kept = graph.addNode(OpKind::Softmax, {x}, {}, kModelLine);
      REQUIRE(kept);
      REQUIRE(graph.addOutput("y", *y));
      REQUIRE(graph.addOutput("kept", *kept));
      // Wide enough to reach softplus's threshold and both sides of every kink.
      NamedTensors bindings = randomBindings(graph, 17, -30.0, 30.0);
      NamedTensors expected = interpretOrFail(graph, bindings);

      CHECK(runPassOrFail(createDecomposePass(opsWithoutKernels()), graph));
      CHECK(countNodes(graph, OpKind::Softmax) == 1);
      for (const Node *node : graph.nodes()) {
        INFO("node " << node->name());
        CHECK_FALSE(isCompositeElementwise(node->info()));
        CHECK((node->kind() == OpKind::Softmax || node->info().decompose == nullptr));
        CHECK(node->location().str() == kModelLine.str());
      }
      requireSameOutputs(expected, interpretOrFail(graph, bindings));
    }
  }
}

TEST_CASE("fusion refuses a composite elementwise op that was not decomposed",
          "[decompose][composite][fusion]") {
  Graph graph("undecomposed");
  Value *x = *graph.addInput("x", tensorType(DType::F32, {5}));
  auto y = graph.addNode(OpKind::HardSwish, {x}, {}, kModelLine);
  REQUIRE(y);
  REQUIRE(graph.addOutput("y", *y));
  auto plan = planFusion(graph);
  REQUIRE_FALSE(plan);
  CHECK_THAT(plan.error().str(), Catch::Contains("hard_swish"));
  CHECK_THAT(plan.error().str(), Catch::Contains("decompose it first"));
}

TEST_CASE("constant folding evaluates a composite elementwise op as the interpreter does",
          "[fold][composite]") {
  Graph graph("folded");
  auto constant = graph.addNode(OpKind::Constant, {},
                                {{"dtype", DType::F16},
                                 {"shape", Shape{4}},
                                 {"value", std::vector<double>{-3, -0.5, 0.75, 40}}});
  REQUIRE(constant);
  auto y = graph.addNode(OpKind::Softplus, {*constant}, {{"beta", 2.0}, {"threshold", 10.0}});
  REQUIRE(y);
  REQUIRE(graph.addOutput("y", *y));
  NamedTensors expected = interpretOrFail(graph, {});
  CHECK(runPassOrFail(createConstantFoldingPass(), graph));
  REQUIRE(graph.outputs()[0].value->definingNode()->kind() == OpKind::Constant);
  requireSameOutputs(expected, interpretOrFail(graph, {}));
}
