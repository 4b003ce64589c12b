// The examples' MLP and CNN built with a symbolic batch run on the reference
// at sizes 1, 7 and the maximum, bit-exact against the example built
// statically at that size (the same fp64 reference after specialization).
#include "examples/models/FashionMnistCnn.h"
#include "examples/models/Mlp.h"
#include "frontend/nn/Layers.h"
#include "ir/graph/Interpreter.h"
#include "ir/graph/Specialize.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace kiln;

namespace {

// The same layers as examples::buildMlp and examples::buildFashionMnistCnn,
// with `batch` as the input's first dim: the parameter names and the op
// sequence must come out the same, which the comparison checks.
void buildSymbolicMlp(Graph &graph, const examples::MlpConfig &config, Dim batch) {
  Tensor x = graph.input("x", {batch, config.inputs});
  for (int64_t width : config.hidden)
    x = nn::Dense(width, config.activation)(graph, x);
  Tensor result = nn::Dense(config.classes, examples::headActivation(config.head))(graph, x);
  graph.output(examples::headOutputName(config.head), result);
}

void buildSymbolicCnn(Graph &graph, const examples::FashionMnistCnnConfig &config, Dim batch) {
  using namespace kiln::nn;
  Tensor images =
      graph.input("images", {batch, config.channels, config.imageSize, config.imageSize});
  Sequential model(Conv2D(config.convFilters[0], {3, 3}, Activation::Relu), MaxPool2D(),
                   Conv2D(config.convFilters[1], {3, 3}, Activation::Relu), MaxPool2D(),
                   Conv2D(config.convFilters[2], {3, 3}, Activation::Relu), Flatten(),
                   Dense(config.hidden, Activation::Relu),
                   Dense(config.classes, examples::headActivation(config.head)));
  graph.output(examples::headOutputName(config.head), model(graph, images));
}

bool sameBytes(const HostTensor &a, const HostTensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin(), b.bytes().end());
}

/// Runs the symbolic graph and the static one (same parameters) on the same
/// fresh input and checks every output bit for bit.
void checkSameAsStatic(const Graph &symbolic, const Graph &staticGraph, uint64_t seed) {
  REQUIRE(symbolic.finalize().has_value());
  REQUIRE(staticGraph.finalize().has_value());
  NamedTensors inputs = staticGraph.paramValues();
  Rng rng(seed);
  for (const ir::Value *input : staticGraph.ir().inputs())
    inputs.emplace(input->name(),
                   HostTensor::randomUniform(input->type().dtype, input->type().shape, rng));
  auto expected = interpret(staticGraph.ir(), inputs);
  REQUIRE(expected.has_value());
  auto actual = interpret(symbolic.ir(), inputs);
  if (!actual)
    FAIL(actual.error().str());
  REQUIRE(actual->size() == expected->size());
  for (const auto &[name, tensor] : *expected)
    CHECK(sameBytes(actual->at(name), tensor));
}

} // namespace

TEST_CASE("the MLP with a symbolic batch equals the static MLP at 1, 7 and 256",
          "[ir][symbolic]") {
  Graph symbolic("mlp", 5);
  buildSymbolicMlp(symbolic, {}, kiln::dim("N", 1, 256));
  REQUIRE(symbolic.finalize().has_value());
  CHECK(symbolic.ir().outputs()[0].value->type().str() == "f32[N,10]");
  for (int64_t batch : {1, 7, 256}) {
    INFO("batch " << batch);
    Graph fixed("mlp", 5);
    examples::MlpConfig config;
    config.batch = batch;
    examples::buildMlp(fixed, config);
    checkSameAsStatic(symbolic, fixed, static_cast<uint64_t>(batch));
  }
}

TEST_CASE("the CNN with a symbolic batch equals the static CNN at 1, 7 and 16",
          "[ir][symbolic]") {
  Graph symbolic("cnn", 9);
  buildSymbolicCnn(symbolic, {}, kiln::dim("B", 1, 16));
  REQUIRE(symbolic.finalize().has_value());
  CHECK(symbolic.ir().outputs()[0].value->type().str() == "f32[B,10]");
  for (int64_t batch : {1, 7, 16}) {
    INFO("batch " << batch);
    Graph fixed("cnn", 9);
    examples::FashionMnistCnnConfig config;
    config.batch = batch;
    examples::buildFashionMnistCnn(fixed, config);
    checkSameAsStatic(symbolic, fixed, static_cast<uint64_t>(batch) + 100);
  }
}

TEST_CASE("running the symbolic MLP outside its range names the input and the symbol",
          "[ir][symbolic]") {
  Graph symbolic("mlp", 5);
  buildSymbolicMlp(symbolic, {}, kiln::dim("N", 1, 256));
  NamedTensors inputs = symbolic.paramValues();
  Rng rng(3);
  inputs.emplace("x", HostTensor::randomUniform(DType::F32, {257, 784}, rng));
  auto result = interpret(symbolic.ir(), inputs);
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().message() == "input 'x' dim 0 is the size symbol N in [1, 256], but the "
                                    "actual size 257 is outside its range");
}
