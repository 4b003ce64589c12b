// The training step: one step against the fp64 interpreter, the loss falling
// with each optimizer, gradient accumulation against one big batch, and
// clipping by global norm.
#include "CompileTestUtil.h"
#include "TrainingTestUtil.h"

#include "compiler/training/Trainer.h"
#include "ir/graph/Interpreter.h"
#include "frontend/nn/LayerNorm.h"
#include "ir/graph/Widen.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace kiln;
using namespace kiln::training;

namespace {

TrainingOptions cpuOptions(OptimizerOptions optimizer) {
  TrainingOptions options;
  options.optimizer = optimizer;
  options.compile.target = TargetKind::Cpu;
  return options;
}

Trainer makeTrainer(const Graph &model, const TrainingOptions &options) {
  auto trainer = Trainer::create(model, options);
  if (!trainer)
    FAIL(trainer.error().str());
  return std::move(*trainer);
}

StepResult runStep(Trainer &trainer, const NamedTensors &batch) {
  auto result = trainer.step(batch);
  if (!result)
    FAIL(result.error().str());
  return std::move(*result);
}

/// The global L2 distance between two sets of tensors over `names`.
double globalDistance(const NamedTensors &a, const NamedTensors &b,
                      const std::vector<std::string> &names) {
  double sum = 0;
  for (const std::string &name : names)
    for (int64_t i = 0; i < a.at(name).numElements(); ++i)
      sum += std::pow(a.at(name).getDouble(i) - b.at(name).getDouble(i), 2);
  return std::sqrt(sum);
}

} // namespace

namespace {

/// Runs one step of `trainer` on `batch` and the same step (forward,
/// gradients, clipping and update) of its program widened to fp64 in the
/// interpreter, and compares the loss, the gradient norm, every parameter and
/// every state slot.
void checkStepAgainstInterpreter(const Graph &model, Trainer &trainer, const NamedTensors &batch) {
  const TrainingOptions &options = trainer.options();
  NamedTensors before = trainer.params().value();
  StepResult result = runStep(trainer, batch);

  NamedTensors tensors = batch;
  for (const auto &[name, value] : model.paramValues())
    tensors.emplace(name, value);
  NamedTensors stateBefore = trainer.optimizerState().value();
  for (const auto &[name, value] : stateBefore)
    tensors.emplace(name, HostTensor(value.dtype(), value.shape())); // zero before step 1
  for (auto &[name, value] :
       optimizerScalarValues(options.optimizer, options.optimizer.learningRate, 1, DType::F32))
    tensors.emplace(name, value);
  auto wide = ir::widenGraph(*trainer.program().step, DType::F32, DType::F64);
  REQUIRE(wide);
  auto reference = ir::interpret(**wide, ir::widenTensors(tensors, DType::F32, DType::F64));
  REQUIRE(reference);

  // f32 against fp64 through a forward and backward pass of this size: 1e-5.
  CHECK(result.loss == Approx(reference->at(options.lossOutput).getDouble(0)).epsilon(1e-5));
  if (options.clipGlobalNorm) {
    REQUIRE(result.gradNorm);
    CHECK(*result.gradNorm ==
          Approx(reference->at("train.grad_norm").getDouble(0)).epsilon(1e-5));
    CHECK(*result.gradNorm > *options.clipGlobalNorm); // so the clipping was active
  }
  test::checkStateMatchesUpdates(trainer, *reference);
  NamedTensors params = trainer.params().value();
  for (const std::string &name : trainer.program().trainable) {
    CAPTURE(name);
    double moved = 0;
    for (int64_t i = 0; i < params.at(name).numElements(); ++i)
      moved =
          std::max(moved, std::abs(params.at(name).getDouble(i) - before.at(name).getDouble(i)));
    CHECK(moved > 1e-4); // the step moved the parameter by far more than the tolerance
  }
  CHECK(trainer.stepCount() == 1);
}

} // namespace

TEST_CASE("one training step on the CPU matches the step in the fp64 interpreter",
          "[training]") {
  uint64_t seed = test::freshSeed();
  CAPTURE(seed);
  SECTION("an MLP classifier, Nesterov SGD with weight decay, clipping") {
    test::MlpShape shape{.batch = 7, .features = 5, .hidden = 9, .classes = 4};
    auto model = test::buildMlp(shape, false, 0.1);
    TrainingOptions options = cpuOptions(OptimizerOptions::sgd(0.2, 0.9, true, 0.01));
    options.clipGlobalNorm = 0.1;
    Trainer trainer = makeTrainer(*model, options);
    checkStepAgainstInterpreter(*model, trainer, test::separableBatch(shape, seed));
    CHECK(trainer.program().stateSlots == std::vector<std::string>{"momentum"});
  }
  SECTION("a regression through layer norm, mean squared error, momentum SGD") {
    Graph model("regression", 3);
    Tensor x = model.input("x", {5, 6});
    Tensor target = model.input("target", {5, 2});
    Tensor hidden = nn::Dense(8, nn::Activation::Tanh)(model, x);
    Tensor normalized = nn::LayerNorm()(model, hidden);
    Tensor prediction = nn::Dense(2)(model, normalized);
    model.output("prediction", prediction);
    model.output("loss", nn::meanSquaredError(prediction, target));
    Trainer trainer = makeTrainer(model, cpuOptions(OptimizerOptions::sgd(0.1, 0.5)));
    Rng rng(seed);
    NamedTensors batch = {{"x", HostTensor::randomUniform(DType::F32, {5, 6}, rng)},
                          {"target", HostTensor::randomUniform(DType::F32, {5, 2}, rng)}};
    checkStepAgainstInterpreter(model, trainer, batch);
    CHECK(trainer.program().trainable.size() == 6); // two Dense layers and the layer norm
  }
}

TEST_CASE("the loss of a small MLP falls on a separable problem with each optimizer",
          "[training]") {
  test::MlpShape shape{.batch = 16, .features = 4, .hidden = 8, .classes = 3};
  auto model = test::buildMlp(shape);
  NamedTensors data = test::separableBatch(shape, 101);
  struct Case {
    std::string name;
    OptimizerOptions optimizer;
    passes::PrecisionPolicy precision = passes::PrecisionPolicy::Fp32;
  };
  for (const Case &c : {Case{"sgd momentum", OptimizerOptions::sgd(0.1, 0.9)},
                        Case{"adam", OptimizerOptions::adam(0.02)},
                        Case{"adamw", OptimizerOptions::adamW(0.02, 0.01)},
                        Case{"adam bf16", OptimizerOptions::adam(0.02),
                             passes::PrecisionPolicy::Bf16Mixed}}) {
    CAPTURE(c.name);
    TrainingOptions options = cpuOptions(c.optimizer);
    options.compile.precision = c.precision;
    Trainer trainer = makeTrainer(*model, options);
    double first = runStep(trainer, data).loss, last = first;
    for (int step = 1; step < 50; ++step) {
      last = runStep(trainer, data).loss;
      REQUIRE(std::isfinite(last));
    }
    CAPTURE(first, last);
    CHECK(last < 0.5 * first);
    CHECK(trainer.stepCount() == 50);
  }
}

TEST_CASE("accumulating k micro-batches equals one step on their concatenation; clipping caps "
          "the global norm",
          "[training]") {
  // Micro-batches of 3 rows (odd), k = 2, against one batch of 6.
  test::MlpShape micro{.batch = 3, .features = 5, .hidden = 6, .classes = 4};
  test::MlpShape whole = micro;
  whole.batch = 6;
  auto microModel = test::buildMlp(micro);
  auto wholeModel = test::buildMlp(whole);
  TrainingOptions options = cpuOptions(OptimizerOptions::sgd(0.5, 0.9));
  options.clipGlobalNorm = 0.05;
  Trainer single = makeTrainer(*wholeModel, options);
  options.accumulationSteps = 2;
  // Loss scaling by a power of two changes no f32 gradient bit (barring
  // overflow), so the accumulated side also runs the scaled path.
  options.lossScale.mode = LossScaleOptions::Mode::Dynamic;
  options.lossScale.initialScale = 1024;
  Trainer accumulated = makeTrainer(*microModel, options);
  REQUIRE(accumulated.program().gradient);
  REQUIRE(accumulated.program().update);
  REQUIRE(accumulated.program().gradient->findInput(kLossScaleInput));

  uint64_t seed = test::freshSeed();
  CAPTURE(seed);
  for (int step = 0; step < 3; ++step) {
    NamedTensors batch = test::separableBatch(whole, seed + static_cast<uint64_t>(step));
    std::vector<NamedTensors> parts = {test::sliceBatch(batch, 0, 3),
                                       test::sliceBatch(batch, 3, 6)};
    NamedTensors before = single.params().value();
    StepResult one = runStep(single, batch);
    auto many = accumulated.step(parts);
    REQUIRE(many);
    CHECK(many->outputs.size() == 2);
    CHECK_FALSE(many->skipped);
    CHECK(many->lossScale == 1024);
    CHECK(many->loss == Approx(one.loss).epsilon(1e-5));
    REQUIRE(one.gradNorm);
    REQUIRE(many->gradNorm);
    CHECK(*many->gradNorm == Approx(*one.gradNorm).epsilon(1e-5));
    NamedTensors singleParams = single.params().value();
    NamedTensors accumulatedParams = accumulated.params().value();
    for (const auto &[name, value] : singleParams)
      for (int64_t i = 0; i < value.numElements(); ++i)
        CHECK(accumulatedParams.at(name).getDouble(i) ==
              Approx(value.getDouble(i)).epsilon(1e-5).margin(1e-6));
    if (step == 0) {
      // The first momentum step moves the parameters by lr * the clipped
      // gradients, whose global norm is the clip (the gradients are larger).
      CHECK(*one.gradNorm > 0.05);
      double moved = globalDistance(singleParams, before, single.program().trainable);
      CHECK(moved == Approx(0.5 * 0.05).epsilon(1e-4));
    }
  }
  auto wrongCount = accumulated.step(test::separableBatch(micro, 1));
  REQUIRE_FALSE(wrongCount);
  CHECK_THAT(wrongCount.error().message(),
             Catch::Contains("got 1 batches, but accumulationSteps is 2"));
}
