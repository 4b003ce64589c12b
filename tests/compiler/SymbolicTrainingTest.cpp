// Training with a symbolic batch (docs/dynamic-shapes.md, decision 14): one compiled training
// program steps on batches of any size in its range (an epoch's last partial batch, a rank's
// smaller shard), each step the fp64 interpreter's step at that size: the loss's mean divides
// by the run's rows, the bias gradients sum over them, the weight gradients are GEMMs whose K
// is the run's batch.
#include "CompileTestUtil.h"
#include "TrainingTestUtil.h"

#include "compiler/training/Trainer.h"
#include "examples/models/LstmLanguageModel.h"
#include "frontend/nn/Conv2D.h"
#include "frontend/nn/Dense.h"
#include "frontend/nn/Flatten.h"
#include "frontend/nn/LayerNorm.h"
#include "frontend/nn/Losses.h"
#include "ir/graph/Interpreter.h"
#include "ir/graph/Widen.h"

#include <catch2/catch.hpp>

#include <cmath>

namespace kiln::test {
namespace {

using training::StepResult;
using training::Trainer;
using training::TrainingOptions;

/// x [N, 5] -> Dense(9, relu) -> LayerNorm -> Dense(4) = "logits"; "loss" =
/// softmaxCrossEntropy(logits, "labels"), with N in [1, maxBatch].
std::unique_ptr<Graph> buildClassifier(int64_t maxBatch) {
  auto graph = std::make_unique<Graph>("classifier", 5);
  Dim n = kiln::dim("N", 1, maxBatch);
  Tensor x = graph->input("x", {n, 5});
  Tensor labels = graph->input("labels", {n}, DType::I32);
  Tensor hidden = nn::Dense(9, nn::Activation::Relu)(*graph, x);
  Tensor logits = nn::Dense(4)(*graph, nn::LayerNorm()(*graph, hidden));
  graph->output("logits", logits);
  graph->output("loss", nn::softmaxCrossEntropy(logits, labels, 0.1));
  return graph;
}

NamedTensors randomBatch(int64_t rows, Rng &rng) {
  HostTensor labels(DType::I32, {rows});
  for (int64_t n = 0; n < rows; ++n)
    labels.setDouble(n, static_cast<double>(rng.nextU64() % 4));
  return {{"x", HostTensor::randomUniform(DType::F32, {rows, 5}, rng)}, {"labels", labels}};
}

/// One step of `trainer` on `batch` against the same step of its program, specialized at the
/// batch's rows and widened to fp64, in the interpreter: the loss, every parameter and every
/// state slot after the step.
void checkStep(Trainer &trainer, const NamedTensors &batch, const Shape &logitsShape) {
  const TrainingOptions &options = trainer.options();
  NamedTensors tensors = batch;
  NamedTensors params = trainer.params().value(), state = trainer.optimizerState().value();
  tensors.insert(params.begin(), params.end());
  tensors.insert(state.begin(), state.end());
  NamedTensors scalars = training::optimizerScalarValues(options.optimizer, trainer.learningRate(),
                                                         trainer.stepCount() + 1, DType::F32);
  tensors.insert(scalars.begin(), scalars.end());

  auto step = trainer.step(batch);
  REQUIRE(step.has_value());
  auto wide = ir::widenGraph(*trainer.program().step, DType::F32, DType::F64);
  INFO((wide ? std::string() : wide.error().str()));
  REQUIRE(wide.has_value());
  auto reference = ir::interpret(**wide, ir::widenTensors(tensors, DType::F32, DType::F64));
  INFO((reference ? std::string() : reference.error().str()));
  REQUIRE(reference.has_value());

  // f32 against fp64 through a forward and backward pass of this size: 1e-5.
  CHECK(step->loss == Approx(reference->at(options.lossOutput).getDouble(0)).epsilon(1e-5));
  // The run's rows, not the range's maximum.
  CHECK(step->outputs.at(0).at("logits").shape() == logitsShape);
  checkStateMatchesUpdates(trainer, *reference);
}

} // namespace

TEST_CASE("one training program with a symbolic batch steps on every batch size in its range",
          "[training][symbolic]") {
  uint64_t seed = freshSeed();
  CAPTURE(seed);
  Rng rng(seed);
  auto model = buildClassifier(16);
  REQUIRE(model->finalize().has_value());
  TrainingOptions options;
  options.optimizer = training::OptimizerOptions::adam(0.01);
  options.clipGlobalNorm = 10.0;
  options.compile.target = TargetKind::Cpu;
  auto trainer = Trainer::create(*model, options);
  INFO((trainer ? std::string() : trainer.error().str()));
  REQUIRE(trainer.has_value());
  // A full batch, an odd one, the smallest: each on the state the previous steps left.
  for (int64_t rows : {16, 7, 1, 13}) {
    CAPTURE(rows);
    checkStep(*trainer, randomBatch(rows, rng), {rows, 4});
  }
  CHECK(trainer->stepCount() == 4);

  auto outside = trainer->step(randomBatch(17, rng));
  REQUIRE_FALSE(outside.has_value());
  CHECK_THAT(outside.error().message(),
             Catch::Contains("the size symbol N in [1, 16], but the actual size 17 is outside "
                             "its range"));
  CHECK(trainer->stepCount() == 4); // the refused step changed nothing
}

TEST_CASE("micro-batches of one step with a symbolic batch must have equal rows",
          "[training][symbolic]") {
  Rng rng(freshSeed());
  auto model = buildClassifier(8);
  REQUIRE(model->finalize().has_value());
  TrainingOptions options;
  options.compile.target = TargetKind::Cpu;
  options.accumulationSteps = 2;
  auto trainer = Trainer::create(*model, options);
  REQUIRE(trainer.has_value());
  std::vector<NamedTensors> equal = {randomBatch(5, rng), randomBatch(5, rng)};
  REQUIRE(trainer->step(equal).has_value());
  std::vector<NamedTensors> unequal = {randomBatch(8, rng), randomBatch(3, rng)};
  auto refused = trainer->step(unequal);
  REQUIRE_FALSE(refused.has_value());
  CHECK_THAT(refused.error().message(),
             Catch::Contains("micro-batch 1 has 3 rows, micro-batch 0 has 8"));
  CHECK(trainer->stepCount() == 1);
}

TEST_CASE("an LSTM language model trains on any batch of sequences on one compile",
          "[training][symbolic]") {
  // The embedding's gradient sums over the run's token ids (a GEMM whose K is their count),
  // the loss's mean over the run's words (N * 3 of them).
  uint64_t seed = freshSeed();
  CAPTURE(seed);
  Rng rng(seed);
  Graph model("lm", 3);
  examples::LstmLanguageModelConfig config{.batch = kiln::dim("N", 1, 4),
                                           .sequenceLength = 3,
                                           .vocabularySize = 7,
                                           .embeddingDim = 4,
                                           .units = 5,
                                           .head = examples::ClassifierHead::Logits};
  Tensor logits = examples::buildLstmLanguageModel(model, config);
  Tensor targets = model.input("targets", {config.batch, 3}, DType::I64);
  model.output("loss", nn::softmaxCrossEntropy(reshape(logits, {-1, 7}), reshape(targets, {-1})));
  REQUIRE(model.finalize().has_value());
  TrainingOptions options;
  options.optimizer = training::OptimizerOptions::adam(0.05);
  options.compile.target = TargetKind::Cpu;
  auto trainer = Trainer::create(model, options);
  INFO((trainer ? std::string() : trainer.error().str()));
  REQUIRE(trainer.has_value());
  for (int64_t rows : {4, 1, 3}) {
    CAPTURE(rows);
    HostTensor tokens(DType::I64, {rows, 3}), next(DType::I64, {rows, 3});
    for (int64_t i = 0; i < rows * 3; ++i) {
      tokens.setDouble(i, static_cast<double>(rng.nextU64() % 7));
      next.setDouble(i, static_cast<double>(rng.nextU64() % 7));
    }
    checkStep(*trainer, {{"tokens", tokens}, {"targets", next}}, {rows, 3, 7});
  }
}

TEST_CASE("a trainable convolution with a symbolic batch is refused, naming the filter gradient",
          "[training][symbolic]") {
  // Its filter gradient sums over the batch as a convolution's channels (static sizes).
  Graph model("conv", 3);
  Dim n = kiln::dim("N", 1, 8);
  Tensor x = model.input("x", {n, 1, 6, 6});
  Tensor labels = model.input("labels", {n}, DType::I32);
  Tensor features = nn::Flatten()(model, nn::Conv2D(2, {3, 3})(model, x));
  Tensor logits = nn::Dense(3)(model, features);
  model.output("logits", logits);
  model.output("loss", nn::softmaxCrossEntropy(logits, labels));
  REQUIRE(model.finalize().has_value());
  TrainingOptions options;
  options.compile.target = TargetKind::Cpu;
  auto refused = Trainer::create(model, options);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == ErrorCode::Unsupported);
  CHECK_THAT(refused.error().message(),
             Catch::Contains("the filter gradient of a convolution whose input f32[N,1,6,6] has "
                             "a symbolic batch is not built yet"));
}

} // namespace kiln::test
