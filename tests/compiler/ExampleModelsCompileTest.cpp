// Every example model compiled for the CPU and checked against the fp64
// reference at a small batch (VGG at 32x32 and the transformer at a small
// width, so the reference stays fast).
#include "CompileTestUtil.h"

#include "examples/models/ExampleRegistry.h"
#include "examples/models/TransformerBlock.h"
#include "examples/models/VggTransfer.h"

#include <fmt/format.h>

namespace kiln::test {
namespace {

/// Builds example `name` at a size the reference interpreter runs quickly.
void buildSmall(const examples::ExampleModel &model, Graph &graph) {
  if (model.name == "vgg") {
    examples::buildVggTransfer(graph, {.batch = 1, .imageSize = 32});
  } else if (model.name == "transformer") {
    examples::buildTransformerBlock(
        graph, {.batch = 2, .sequenceLength = 17, .modelDim = 64, .numHeads = 4, .mlpDim = 128});
  } else {
    model.build(graph, 2);
  }
}

TEST_CASE("every example model compiles and matches the reference", "[compiler]") {
  const auto &models = examples::exampleModels();
  REQUIRE(models.size() == 6);
  size_t index = GENERATE(range<size_t>(0, 6));
  const examples::ExampleModel &model = models[index];
  INFO("example " << model.name);
  Graph graph(model.name, freshSeed());
  buildSmall(model, graph);
  auto finalized = graph.finalize();
  REQUIRE(finalized);

  uint64_t seed = freshSeed();
  Rng rng(seed);
  NamedTensors tensors = graph.paramValues();
  for (const ir::Value *input : graph.ir().inputs()) {
    // Token ids cover the whole vocabulary (the LSTM's embedding has 1000 rows).
    Values values = isInteger(input->type().dtype) ? Values::indices(1000) : Values::normal();
    tensors.emplace(input->name(), randomTensor(input->type().dtype, input->type().shape, rng,
                                                values));
  }
  NamedTensors outputs = checkCompiledMatchesReference(
      graph.ir(), tensors,
      fmt::format("example '{}', input seed {:#x} (--rng-seed {})", model.name, seed,
                  Catch::rngSeed()));
  // Each classifier's rows are distributions; the transformer keeps x's shape.
  REQUIRE(outputs.size() == graph.ir().outputs().size());
  for (const auto &[name, tensor] : outputs) {
    INFO("output " << name);
    if (name != "probabilities")
      continue;
    int64_t classes = tensor.shape().back();
    for (int64_t row = 0; row < tensor.numElements() / classes; ++row) {
      double sum = 0;
      for (int64_t k = 0; k < classes; ++k)
        sum += tensor.getDouble(row * classes + k);
      CHECK(sum == Approx(1.0).margin(1e-4));
    }
  }
}

} // namespace
} // namespace kiln::test
