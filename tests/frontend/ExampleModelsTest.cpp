// Every example model built at a small size and run through the reference
// interpreter: output shapes, finite values, softmax rows summing to 1, the
// frozen base of the transfer model, and the seed CNN at its real size.
#include "frontend/DslTestUtil.h"

#include "examples/models/FashionMnistCnn.h"
#include "examples/models/LstmLanguageModel.h"
#include "examples/models/Mlp.h"
#include "examples/models/ResNetStyle.h"
#include "examples/models/TransformerBlock.h"
#include "examples/models/VggTransfer.h"

#include <algorithm>

using namespace kiln;
using namespace kiln::dsltest;
using namespace kiln::examples;

namespace {

/// Checks that `probabilities` has rows over its last axis that are valid
/// distributions: every entry in [0, 1], each row summing to 1 within 1e-5.
void checkDistributions(const HostTensor &probabilities) {
  REQUIRE(allFinite(probabilities));
  int64_t classes = probabilities.shape().back();
  int64_t rows = probabilities.numElements() / classes;
  for (int64_t row = 0; row < rows; ++row) {
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) {
      double p = probabilities.getDouble(row * classes + k);
      CHECK((p >= 0.0 && p <= 1.0));
      sum += p;
    }
    CHECK(sum == Approx(1.0).margin(1e-5));
  }
}

} // namespace

TEST_CASE("the Fashion-MNIST CNN at a small size", "[examples]") {
  Graph g("cnn", 1);
  FashionMnistCnnConfig config{
      .batch = 3, .imageSize = 16, .convFilters = {4, 6, 5}, .hidden = 7, .classes = 4};
  Tensor probabilities = buildFashionMnistCnn(g, config);
  // 16 -> conv 14 -> pool 7 -> conv 5 -> pool 2 -> conv: 3x3 needs 3, so 2 is too small.
  CHECK(probabilities.poisoned());
  CHECK_THAT(firstError(g), Catch::Contains("conv2d"));

  Graph ok("cnn", 1);
  config.imageSize = 20; // 18 -> 9 -> 7 -> 3 -> 1
  probabilities = buildFashionMnistCnn(ok, config);
  CHECK(probabilities.str() == "f32[3,4]");
  CHECK(ok.ir().params().size() == 10);
  NamedTensors out = run(ok, {{"images", randomF32({3, 1, 20, 20}, 5)}});
  checkDistributions(out.at("probabilities"));
}

TEST_CASE("the seed CNN at batch 8 runs through the interpreter", "[examples]") {
  Graph g("fashion_mnist_cnn", 0);
  Tensor probabilities = buildFashionMnistCnn(g);
  CHECK(probabilities.str() == "f32[8,10]");
  CHECK(g.paramValues().at("conv2d.weight").typeStr() == "f32[32,1,3,3]");
  CHECK(g.paramValues().at("conv2d_2.weight").typeStr() == "f32[64,64,3,3]");
  CHECK(g.paramValues().at("dense.weight").typeStr() == "f32[576,64]");
  CHECK(g.paramValues().at("dense_1.weight").typeStr() == "f32[64,10]");
  Rng rng(8);
  HostTensor images = HostTensor::randomUniform(DType::F32, {8, 1, 28, 28}, rng, 0.0, 1.0);
  NamedTensors out = run(g, {{"images", images}});
  checkDistributions(out.at("probabilities"));
}

TEST_CASE("the MLP", "[examples]") {
  Graph g;
  Tensor probabilities = buildMlp(g, {.batch = 5, .inputs = 12, .hidden = {9, 7, 6}, .classes = 3});
  CHECK(probabilities.str() == "f32[5,3]");
  CHECK(g.ir().params().size() == 8);
  checkDistributions(run(g, {{"x", randomF32({5, 12}, 1)}}).at("probabilities"));
}

TEST_CASE("the LSTM language model, per step and last step", "[examples]") {
  for (bool perStep : {true, false}) {
    INFO("perStep " << perStep);
    Graph g("lm", 4);
    LstmLanguageModelConfig config{.batch = 2,
                                   .sequenceLength = 5,
                                   .vocabularySize = 11,
                                   .embeddingDim = 6,
                                   .units = 4,
                                   .perStepPredictions = perStep};
    Tensor probabilities = buildLstmLanguageModel(g, config);
    CHECK(probabilities.str() == (perStep ? "f32[2,5,11]" : "f32[2,11]"));
    Rng rng(6);
    HostTensor tokens(DType::I64, {2, 5});
    for (int64_t i = 0; i < tokens.numElements(); ++i)
      tokens.setDouble(i, static_cast<double>(rng.nextU64() % 11));
    checkDistributions(run(g, {{"tokens", tokens}}).at("probabilities"));
  }
}

TEST_CASE("the VGG transfer model freezes its base and trains its head", "[examples]") {
  Graph g("vgg", 2);
  VggTransferConfig config{
      .batch = 2, .imageSize = 32, .blockWidths = {2, 3, 4, 4, 5}, .hidden = 6, .classes = 3};
  Tensor probabilities = buildVggTransfer(g, config);
  CHECK(probabilities.str() == "f32[2,3]");
  std::vector<std::string> frozen = g.frozenParamNames();
  CHECK(frozen.size() == 26); // 13 convs, weight and bias each
  CHECK(frozen.front() == "block1_conv1.weight");
  CHECK(frozen.back() == "block5_conv3.bias");
  CHECK(g.trainableParamNames() == std::vector<std::string>{"fc1.weight", "fc1.bias",
                                                            "predictions.weight",
                                                            "predictions.bias"});
  CHECK(g.paramValues().at("block3_conv3.weight").typeStr() == "f32[4,4,3,3]");
  CHECK(g.paramValues().at("fc1.weight").typeStr() == "f32[5,6]");
  checkDistributions(run(g, {{"images", randomF32({2, 3, 32, 32}, 3)}}).at("probabilities"));
}

TEST_CASE("the transformer block keeps its input's shape", "[examples]") {
  Graph g("gpt_block", 5);
  TransformerBlockConfig config{
      .batch = 2, .sequenceLength = 6, .modelDim = 8, .numHeads = 2, .mlpDim = 12};
  Tensor y = buildTransformerBlock(g, config);
  CHECK(y.str() == "f32[2,6,8]");
  CHECK(g.paramValues().at("transformer_block.attn.query.weight").typeStr() == "f32[8,8]");
  CHECK(g.paramValues().at("transformer_block.mlp_fc.weight").typeStr() == "f32[8,12]");
  CHECK(g.paramValues().at("transformer_block.ln_2.weight").typeStr() == "f32[8]");
  HostTensor x = randomF32({2, 6, 8}, 9);
  HostTensor out = run(g, {{"x", x}}).at("y");
  CHECK(out.typeStr() == "f32[2,6,8]");
  CHECK(allFinite(out));
  // The residual path: the output is the input plus something, not a copy.
  CHECK(out.toDoubles() != x.toDoubles());

  // GPT-2 small's default sizes build (not run: 768-wide in fp64 is slow).
  Graph full("gpt2_block");
  CHECK(buildTransformerBlock(full).str() == "f32[1,128,768]");
  CHECK(full.paramValues().at("transformer_block.mlp_fc.weight").typeStr() == "f32[768,3072]");
  CHECK(full.finalize().has_value());
}

TEST_CASE("the ResNet-style model uses residual adds and batch norm", "[examples]") {
  Graph g("resnet", 6);
  ResNetStyleConfig config{.batch = 2,
                           .imageSize = 8,
                           .channels = 3,
                           .stageWidths = {4, 6},
                           .blocksPerStage = 2,
                           .classes = 5};
  Tensor probabilities = buildResNetStyle(g, config);
  CHECK(probabilities.str() == "f32[2,5]");
  CHECK(g.paramValues().at("layer2.0.downsample.0.weight").typeStr() == "f32[6,4,1,1]");
  CHECK(g.paramValues().at("layer1.1.conv2.weight").typeStr() == "f32[4,4,3,3]");
  CHECK_FALSE(g.isTrainable("layer2.1.bn2.running_mean"));
  CHECK(g.paramValues().count("layer1.0.downsample.0.weight") == 0);
  size_t batchNorms = 0, adds = 0;
  for (const ir::Node *node : g.ir().nodes()) {
    batchNorms += node->kind() == ir::OpKind::BatchNorm;
    adds += node->kind() == ir::OpKind::Add;
  }
  CHECK(batchNorms == 1 + 4 * 2 + 1); // stem, two per block, one downsample
  CHECK(adds == 4 + 1);               // one residual add per block, the dense bias
  checkDistributions(run(g, {{"images", randomF32({2, 3, 8, 8}, 4)}}).at("probabilities"));
}
