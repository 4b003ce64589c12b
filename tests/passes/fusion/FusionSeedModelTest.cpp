// Fusion of the seed models built with the DSL (examples/models): every plan
// keeps the invariants, and the groups are the kernels one would write by hand
// (conv + bias + relu, dense + bias + activation, pools and softmax alone).
#include "FusionTestUtil.h"

#include "examples/models/FashionMnistCnn.h"
#include "examples/models/LstmLanguageModel.h"
#include "examples/models/Mlp.h"
#include "examples/models/ResNetStyle.h"
#include "examples/models/TransformerBlock.h"
#include "examples/models/VggTransfer.h"
#include "passes/graph/GraphPasses.h"

using namespace kiln;
using namespace kiln::passes;
using namespace kiln::testing;

namespace {

FusionPlan planModel(Graph &model) {
  auto status = model.finalize();
  if (!status)
    FAIL("model does not build: " << status.error().str());
  FusionPlan plan = planOrFail(model.ir());
  checkPlanInvariants(model.ir(), plan);
  return plan;
}

std::vector<std::string> kindNames(const FusionPlan &plan) {
  std::vector<std::string> kinds;
  for (const FusionGroup &group : plan.groups)
    kinds.emplace_back(groupKindName(group.kind));
  return kinds;
}

size_t countKind(const FusionPlan &plan, GroupKind kind) {
  return static_cast<size_t>(std::count_if(plan.groups.begin(), plan.groups.end(),
                                           [&](const FusionGroup &g) { return g.kind == kind; }));
}

/// Op names of a group's nodes, in order.
std::vector<std::string> opsOf(const FusionGroup &group) {
  std::vector<std::string> ops;
  for (const ir::Node *node : group.nodes)
    ops.emplace_back(node->name());
  return ops;
}

using Ops = std::vector<std::string>;

} // namespace

TEST_CASE("fusion of the seed CNN", "[passes][fusion][models]") {
  Graph model("cnn");
  examples::buildFashionMnistCnn(model, {.batch = 3});
  FusionPlan plan = planModel(model);
  CHECK(kindNames(plan) == std::vector<std::string>{"contraction", "pooling", "contraction",
                                                    "pooling", "contraction", "alias",
                                                    "contraction", "contraction", "row_norm"});
  for (int id : {0, 2, 4})
    CHECK(opsOf(plan.groups[id]) == Ops{"conv2d", "reshape", "add", "relu"});
  CHECK(opsOf(plan.groups[6]) == Ops{"matmul", "add", "relu"});
  CHECK(opsOf(plan.groups[7]) == Ops{"matmul", "add"});
  // The pool reads the relu that ends the conv group before it.
  CHECK(plan.groups[1].inputs == std::vector<const ir::Value *>{plan.groups[0].root->result()});
}

TEST_CASE("fusion of the seed MLP", "[passes][fusion][models]") {
  Graph model("mlp");
  examples::buildMlp(model, {.batch = 5, .inputs = 17, .hidden = {9, 7, 4}});
  FusionPlan plan = planModel(model);
  CHECK(kindNames(plan) == std::vector<std::string>{"contraction", "contraction", "contraction",
                                                    "contraction", "row_norm"});
  for (int id : {0, 1, 2})
    CHECK(opsOf(plan.groups[id]) == Ops{"matmul", "add", "relu"});
  CHECK(opsOf(plan.groups[3]) == Ops{"matmul", "add"});
}

TEST_CASE("fusion of the VGG transfer model", "[passes][fusion][models]") {
  Graph model("vgg");
  examples::buildVggTransfer(model, {.batch = 1, .imageSize = 32, .blockWidths = {4, 4, 8, 8, 8}});
  FusionPlan plan = planModel(model);
  CHECK(plan.groups.size() == 22);
  CHECK(countKind(plan, GroupKind::Contraction) == 15); // 13 convs, 2 dense
  CHECK(countKind(plan, GroupKind::Pooling) == 5);
  CHECK(countKind(plan, GroupKind::Alias) == 1); // flatten
  CHECK(countKind(plan, GroupKind::RowNorm) == 1);
  for (const FusionGroup &group : plan.groups)
    if (group.anchor != nullptr && group.anchor->kind() == ir::OpKind::Conv2D)
      CHECK(opsOf(group) == Ops{"conv2d", "reshape", "add", "relu"});
}

TEST_CASE("fusion of the ResNet-style model", "[passes][fusion][models]") {
  Graph model("resnet");
  examples::buildResNetStyle(
      model, {.batch = 2, .imageSize = 8, .stageWidths = {4, 8}, .blocksPerStage = 2});
  FusionPlan plan = planModel(model);
  // Every conv carries its batch norm; the second conv of a block also the
  // residual add and the relu.
  size_t convs = 0, residuals = 0;
  for (const FusionGroup &group : plan.groups) {
    if (group.anchor == nullptr || group.anchor->kind() != ir::OpKind::Conv2D)
      continue;
    ++convs;
    Ops ops = opsOf(group);
    REQUIRE(ops.size() >= 2);
    CHECK(ops[1] == "batch_norm");
    residuals += ops == Ops{"conv2d", "batch_norm", "add", "relu"};
  }
  CHECK(convs == 1 + 2 * 4 + 1); // stem, two convs per block, one downsample
  CHECK(residuals == 4);
  CHECK(countKind(plan, GroupKind::Pointwise) == 0);
  CHECK(countKind(plan, GroupKind::Pooling) == 1);
}

TEST_CASE("fusion of the LSTM language model", "[passes][fusion][models]") {
  Graph model("lstm");
  examples::buildLstmLanguageModel(
      model,
      {.batch = 2, .sequenceLength = 4, .vocabularySize = 11, .embeddingDim = 6, .units = 5});
  FusionPlan plan = planModel(model);
  // The input projection, three recurrent steps after the first and the
  // vocabulary projection, each a matmul with its add.
  CHECK(countKind(plan, GroupKind::Contraction) == 5);
  for (const FusionGroup &group : plan.groups)
    if (group.kind == GroupKind::Contraction) {
      CHECK(group.anchor->kind() == ir::OpKind::MatMul);
      CHECK(group.root->kind() == ir::OpKind::Add);
    }
  CHECK(countKind(plan, GroupKind::RowNorm) == 1);
}

TEST_CASE("fusion of the transformer block", "[passes][fusion][models]") {
  Graph model("transformer");
  examples::buildTransformerBlock(
      model, {.batch = 1, .sequenceLength = 6, .modelDim = 8, .numHeads = 2, .mlpDim = 16});
  REQUIRE(model.finalize());

  // Attention has no kernel: the plan names it until it is decomposed.
  auto refused = planFusion(model.ir());
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message(),
             Catch::Contains("scaled_dot_product_attention") && Catch::Contains("decompose"));

  PassManager manager;
  manager.add(createDecomposePass({ir::OpKind::ScaledDotProductAttention}));
  REQUIRE(manager.run(model.ir()));
  FusionPlan plan = planModel(model);
  CHECK(countKind(plan, GroupKind::RowNorm) == 2); // ln_1, ln_2
  // q, k, v, scores, weighted values, output projection, mlp_fc, mlp_proj.
  CHECK(countKind(plan, GroupKind::Contraction) == 8);
  bool gelu = false, residual = false;
  for (const FusionGroup &group : plan.groups) {
    Ops ops = opsOf(group);
    gelu = gelu || ops == Ops{"matmul", "add", "gelu"};
    residual =
        residual || (group.kind == GroupKind::Contraction && ops == Ops{"matmul", "add", "add"} &&
                     group.root == model.ir().outputs().front().value->definingNode());
  }
  CHECK(gelu);
  CHECK(residual);

  // Fully decomposed (layer norm and softmax into reductions), it still plans.
  PassManager cleanup;
  REQUIRE(cleanup.addPipeline("decompose,cse,dce"));
  REQUIRE(cleanup.run(model.ir()));
  FusionPlan decomposed = planModel(model);
  CHECK(countKind(decomposed, GroupKind::RowNorm) == 0);
  CHECK(countKind(decomposed, GroupKind::Reduction) >= 6); // 2 per layer norm, 2 per softmax
}
