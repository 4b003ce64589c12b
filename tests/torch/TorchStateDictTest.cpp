// Graph::loadTorchStateDict against PyTorch: modules exported by export_state_dicts.py are
// rebuilt with kiln's nn layers (named as the modules' attributes), their state dicts loaded,
// and the reference interpreter's outputs compared with PyTorch's. Its own main exports the
// fixtures first, or reports the executable skipped (77) where PyTorch is missing.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "frontend/Evaluate.h"
#include "frontend/Ops.h"
#include "frontend/io/Npy.h"
#include "frontend/nn/Layers.h"
#include "tests/frontend/TempDir.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>

namespace {

std::string fixtures;

kiln::HostTensor load(const std::string &name) {
  auto tensor = kiln::io::loadNpy(fixtures + "/" + name + ".npy");
  REQUIRE(tensor);
  return *tensor;
}

// max |actual - expected| <= 1e-4 * max |expected|, as the ONNX model tests.
void checkClose(const kiln::HostTensor &actual, const kiln::HostTensor &expected) {
  REQUIRE(actual.shape() == expected.shape());
  double scale = 0, error = 0;
  for (int64_t i = 0; i < expected.numElements(); ++i) {
    scale = std::max(scale, std::abs(expected.getDouble(i)));
    error = std::max(error, std::abs(actual.getDouble(i) - expected.getDouble(i)));
  }
  INFO(fmt::format("max error {:.3g}, max |torch| {:.3g}", error, scale));
  CHECK(error <= 1e-4 * scale);
}

kiln::NamedTensors run(kiln::Graph &graph, const std::string &model) {
  auto loaded = graph.loadTorchStateDict(fixtures + "/" + model + ".safetensors");
  if (!loaded)
    FAIL(loaded.error().str());
  kiln::NamedTensors inputs;
  for (const kiln::ir::Value *input : graph.ir().inputs())
    inputs.emplace(input->name(), load(model + ".in." + input->name()));
  auto outputs = kiln::evaluate(graph, inputs);
  if (!outputs)
    FAIL(outputs.error().str());
  return *outputs;
}

using namespace kiln;

TEST_CASE("Linear layers: [out, in] weights transposed onto Dense") {
  Graph graph("mlp");
  Tensor x = graph.input("x", {4, 7});
  Tensor h = nn::Dense(16, nn::Activation::Relu, true, "fc1")(graph, x);
  graph.output("y", nn::Dense(3, nn::Activation::Linear, true, "fc2")(graph, h));
  checkClose(run(graph, "mlp").at("y"), load("mlp.out0"));
}

TEST_CASE("Conv2d, BatchNorm2d with its running statistics, Linear") {
  Graph graph("cnn");
  Tensor x = graph.input("x", {2, 3, 8, 8});
  Tensor y = nn::Conv2D(nn::Conv2DConfig{.filters = 8, .padding = Padding::symmetric(1, 1),
                                         .name = "conv"})(graph, x);
  y = relu(nn::BatchNorm(nn::BatchNormConfig{.name = "bn"})(graph, y));
  y = maxPool2d(y, {.kernel = {2, 2}});
  graph.output("y", nn::Dense(5, nn::Activation::Linear, true, "fc")(graph, flatten(y)));
  checkClose(run(graph, "cnn").at("y"), load("cnn.out0"));
}

TEST_CASE("a 2-layer bidirectional LSTM from initial states, with its final states") {
  Graph graph("lstm");
  Tensor ids = graph.input("ids", {3, 5}, DType::I64);
  Tensor h0 = graph.input("h0", {4, 3, 8});
  Tensor c0 = graph.input("c0", {4, 3, 8});
  Tensor embedded = nn::Embedding(20, 6, "embed")(graph, ids);
  nn::LSTM lstm(nn::LSTMConfig{
      .units = 8, .returnSequences = true, .layers = 2, .bidirectional = true, .name = "lstm"});
  nn::RecurrentOutputs outputs = lstm.withState(graph, embedded, h0, c0);
  graph.output("y", outputs.output);
  graph.output("h", outputs.hidden);
  graph.output("c", outputs.cell);
  auto results = run(graph, "lstm");
  checkClose(results.at("y"), load("lstm.out0"));
  checkClose(results.at("h"), load("lstm.out1"));
  checkClose(results.at("c"), load("lstm.out2"));
}

TEST_CASE("a 2-layer GRU from an initial state") {
  Graph graph("gru");
  Tensor x = graph.input("x", {3, 6, 5});
  Tensor h0 = graph.input("h0", {2, 3, 7});
  nn::GRU gru(nn::GRUConfig{.units = 7, .returnSequences = true, .layers = 2, .name = "gru"});
  nn::RecurrentOutputs outputs = gru.withState(graph, x, h0);
  graph.output("y", outputs.output);
  graph.output("h", outputs.hidden);
  auto results = run(graph, "gru");
  checkClose(results.at("y"), load("gru.out0"));
  checkClose(results.at("h"), load("gru.out1"));
}

TEST_CASE("MultiheadAttention's packed in_proj split onto query, key and value") {
  Graph graph("attention");
  Tensor x = graph.input("x", {2, 5, 16});
  Tensor y = nn::MultiHeadAttention(4, 4, false, "attn")(graph, x);
  graph.output("y", nn::LayerNorm(nn::LayerNormConfig{.name = "norm"})(graph, x + y));
  checkClose(run(graph, "attention").at("y"), load("attention.out0"));
}

TEST_CASE("MultiheadAttention with a key padding mask") {
  Graph graph("padded_attention");
  Tensor x = graph.input("x", {3, 6, 16});
  Tensor pad = graph.input("pad", {3, 6}, DType::Bool);
  graph.output("y", nn::MultiHeadAttention(4, 4, false, "attn")(graph, x, x, pad));
  checkClose(run(graph, "padded_attention").at("y"), load("padded_attention.out0"));
}

TEST_CASE("a state dict that does not fit names every tensor and parameter at fault") {
  Graph graph("mlp");
  Tensor x = graph.input("x", {4, 7});
  Tensor h = nn::Dense(16, nn::Activation::Relu, true, "fc1")(graph, x);
  graph.output("y", nn::Dense(4, nn::Activation::Linear, true, "head")(graph, h));
  HostTensor before = graph.paramValues().at("fc1.weight");
  auto loaded = graph.loadTorchStateDict(fixtures + "/mlp.safetensors");
  REQUIRE_FALSE(loaded);
  std::string text = loaded.error().str();
  CHECK_THAT(text, Catch::Contains("not placed: 'fc2.weight'") &&
                       Catch::Contains("no value for parameter 'head.weight'"));
  // All or nothing: fc1, which did fit, is unchanged.
  const HostTensor &after = graph.paramValues().at("fc1.weight");
  CHECK(std::equal(after.bytes().begin(), after.bytes().end(), before.bytes().begin()));
}

} // namespace

int main(int argc, char *argv[]) {
  kiln::testing::TempDir dir;
  fixtures = dir.path().string();
  std::string command = fmt::format("/usr/bin/python3 {}/tests/torch/export_state_dicts.py {}",
                                    KILN_SOURCE_DIR, fixtures);
  int status = std::system(command.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    std::printf("SKIPPED: PyTorch is not installed (see above)\n");
    return 77;
  }
  if (status != 0) {
    std::printf("exporting the state dicts failed (%d)\n", status);
    return 1;
  }
  return Catch::Session().run(argc, argv);
}
