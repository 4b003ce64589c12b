// Gradients of the seed models at small sizes (the MLP, the CNN, the LSTM
// language model, the transformer block, VGG transfer learning) against finite differences: each model is
// built with the DSL in f32, widened to f64 (ir::widenGraph), and checked on a
// few random elements of every trainable parameter. Also the DSL's
// gradients() and trainableParamGradients(): names, frozen parameters, and
// poisoning on error.
#include "GradientCheck.h"

#include "examples/models/FashionMnistCnn.h"
#include "examples/models/LstmLanguageModel.h"
#include "examples/models/Mlp.h"
#include "examples/models/TransformerBlock.h"
#include "examples/models/VggTransfer.h"
#include "frontend/Autodiff.h"
#include "frontend/Ops.h"
#include "ir/graph/Widen.h"

using namespace kiln;
using kiln::test::checkGraphGradients;
using kiln::test::GradientCheckOptions;

namespace {

/// Checks every trainable parameter of `model` (and the f32 inputs in
/// `floatInputs`) on `maxElements` random elements each.
void checkModel(const std::string &label, Graph &model, const std::string &output,
                NamedTensors inputs, const std::vector<std::string> &floatInputs = {}) {
  REQUIRE(model.finalize());
  // Zero-initialized biases would put a relu exactly at its kink wherever the
  // layer below outputs all zeros; random ones keep every input off it.
  Rng rng(Catch::rngSeed() + 11);
  for (const std::string &name : model.trainableParamNames())
    if (name.ends_with(".bias")) {
      const HostTensor &bias = model.paramValues().at(name);
      REQUIRE(model.setParamValue(name, HostTensor::randomNormal(bias.dtype(), bias.shape(), rng)));
    }
  NamedTensors values = model.paramValues();
  for (auto &[name, tensor] : inputs)
    values[name] = tensor;
  std::vector<std::string> wrt = model.trainableParamNames();
  wrt.insert(wrt.end(), floatInputs.begin(), floatInputs.end());
  auto make = [&model]() {
    auto wide = ir::widenGraph(model.ir(), DType::F32, DType::F64);
    if (!wide)
      FAIL(wide.error().str());
    return std::move(*wide);
  };
  GradientCheckOptions options;
  options.maxElements = 3;
  options.seed = Catch::rngSeed() + 5;
  checkGraphGradients(label, make, output, ir::widenTensors(values, DType::F32, DType::F64), wrt,
                      options);
}

} // namespace

TEST_CASE("the MLP's gradients match finite differences", "[autodiff][models]") {
  Graph model("mlp", Catch::rngSeed());
  examples::MlpConfig config;
  config.batch = 3;
  config.inputs = 5;
  config.hidden = {4, 3};
  config.classes = 3;
  examples::buildMlp(model, config);
  Rng rng(Catch::rngSeed() + 1);
  checkModel("mlp", model, "probabilities",
             {{"x", HostTensor::randomNormal(DType::F32, {3, 5}, rng)}}, {"x"});
}

TEST_CASE("the LSTM language model's gradients match finite differences", "[autodiff][models]") {
  Graph model("lstm", Catch::rngSeed());
  examples::LstmLanguageModelConfig config;
  config.batch = 2;
  config.sequenceLength = 3;
  config.vocabularySize = 7;
  config.embeddingDim = 4;
  config.units = 5;
  examples::buildLstmLanguageModel(model, config);
  Rng rng(Catch::rngSeed() + 2);
  std::vector<double> tokens(6);
  for (double &token : tokens)
    token = static_cast<double>(rng.nextU64() % 7);
  checkModel("lstm", model, "probabilities",
             {{"tokens", HostTensor::fromDoubles(DType::I64, {2, 3}, tokens)}});
}

TEST_CASE("the transformer block's gradients match finite differences", "[autodiff][models]") {
  Graph model("transformer", Catch::rngSeed());
  examples::TransformerBlockConfig config;
  config.batch = 1;
  config.sequenceLength = 3;
  config.modelDim = 8;
  config.numHeads = 2;
  config.mlpDim = 12;
  examples::buildTransformerBlock(model, config);
  Rng rng(Catch::rngSeed() + 3);
  checkModel("transformer", model, "y",
             {{"x", HostTensor::randomNormal(DType::F32, {1, 3, 8}, rng)}}, {"x"});
}

TEST_CASE("the CNN's gradients match finite differences", "[autodiff][models]") {
  Graph model("cnn", Catch::rngSeed());
  examples::FashionMnistCnnConfig config;
  config.batch = 2;
  config.imageSize = 18; // 16, pool 8, 6, pool 3, 1: every layer of the seed CNN, small
  config.convFilters = {3, 4, 4};
  config.hidden = 5;
  config.classes = 3;
  examples::buildFashionMnistCnn(model, config);
  Rng rng(Catch::rngSeed() + 6);
  checkModel("cnn", model, "probabilities",
             {{"images", HostTensor::randomNormal(DType::F32, {2, 1, 18, 18}, rng)}}, {"images"});
}

TEST_CASE("VGG transfer learning's gradients match finite differences, through the frozen base",
          "[autodiff][models]") {
  Graph model("vgg", Catch::rngSeed());
  examples::VggTransferConfig config;
  config.imageSize = 32;
  config.blockWidths = {2, 2, 3, 3, 3};
  config.hidden = 4;
  config.classes = 3;
  examples::buildVggTransfer(model, config);
  Rng rng(Catch::rngSeed() + 7);
  // The base is frozen: its gradients are not checked, but the input's gradient flows
  // through all 13 convolutions and 5 pools.
  checkModel("vgg", model, "probabilities",
             {{"images", HostTensor::randomNormal(DType::F32, {1, 3, 32, 32}, rng)}}, {"images"});
}

TEST_CASE("trainableParamGradients names every trainable parameter", "[autodiff]") {
  Graph graph("dense");
  Rng rng(4);
  Tensor x = graph.input("x", {2, 3});
  Tensor w = graph.param("w", HostTensor::randomNormal(DType::F32, {3, 4}, rng));
  Tensor frozen = graph.param("frozen", HostTensor::randomNormal(DType::F32, {4}, rng), false);
  Tensor b = graph.param("b", HostTensor::randomNormal(DType::F32, {4}, rng));
  Tensor loss = reduceSum(tanh(matmul(x, w) + b + frozen), {0, 1});
  std::vector<ParamGradient> gradients = trainableParamGradients(graph, loss);
  REQUIRE(gradients.size() == 2);
  CHECK(gradients[0].name == "w");
  CHECK(gradients[1].name == "b");
  CHECK(gradients[0].gradient.type() == w.type());
  CHECK(gradients[1].gradient.type() == b.type());
  // d/db sum(tanh(z)) = sum over the batch of 1 - tanh(z)^2, also built by hand.
  Tensor z = matmul(x, w) + b + frozen;
  Tensor expected = reduceSum(1.0 - tanh(z) * tanh(z), {0});
  graph.output("grad_b", gradients[1].gradient);
  graph.output("expected", expected);
  REQUIRE(graph.finalize());
  NamedTensors bindings = graph.paramValues();
  bindings["x"] = HostTensor::randomNormal(DType::F32, {2, 3}, rng);
  auto outputs = ir::interpret(graph.ir(), bindings);
  REQUIRE(outputs);
  for (int64_t i = 0; i < 4; ++i)
    CHECK(outputs->at("grad_b").getDouble(i) ==
          Approx(outputs->at("expected").getDouble(i)).epsilon(1e-5));
}

TEST_CASE("gradients() poisons its results on an error", "[autodiff]") {
  Graph graph("errors");
  Tensor x = graph.input("x", {3});
  SECTION("a loss with several elements") {
    Tensor y = exp(x);
    int line = __LINE__ + 1;
    std::vector<Tensor> result = gradients(y, std::vector<Tensor>{x});
    REQUIRE(result.size() == 1);
    CHECK(result[0].poisoned());
    REQUIRE(graph.error());
    CHECK(graph.error()->message().starts_with("autodiff: the loss (the result of exp at "));
    // The error points at the op that made the loss.
    CHECK(graph.error()->location()->line == static_cast<unsigned>(line - 2));
  }
  SECTION("a poisoned loss") {
    Tensor bad = matmul(x, x); // rank 1: an error
    std::vector<Tensor> result = gradients(bad, std::vector<Tensor>{x});
    CHECK(result[0].poisoned());
    CHECK(graph.errorCount() == 1); // no second error for the poisoned operand
  }
  SECTION("a wrt of another graph") {
    Graph other("other");
    Tensor y = other.input("y", {3});
    std::vector<Tensor> result = gradients(reduceSum(x, {0}), std::vector<Tensor>{y});
    CHECK(result[0].poisoned());
    REQUIRE(graph.error());
    CHECK(graph.error()->message() == "gradients: wrt 0 belongs to graph 'other', not 'errors'");
  }
}
