// Trainer state: frozen parameters never change, a checkpoint restores
// training bit for bit, and bad models, options, batches and checkpoints give
// clear errors.
#include "CompileTestUtil.h"
#include "TrainingTestUtil.h"
#include "frontend/TempDir.h"

#include "compiler/training/Trainer.h"
#include "frontend/Ops.h"
#include "frontend/io/Safetensors.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace kiln;
using namespace kiln::training;

namespace {

bool sameBits(const HostTensor &a, const HostTensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0;
}

std::string errorOf(const Graph &model, const TrainingOptions &options) {
  auto program = buildTrainingProgram(model, options);
  REQUIRE_FALSE(program);
  return program.error().str();
}

} // namespace

TEST_CASE("frozen parameters stay bitwise; a checkpoint resumes training bit for bit",
          "[training]") {
  test::MlpShape shape{.batch = 5, .features = 4, .hidden = 6, .classes = 3};
  auto model = test::buildMlp(shape, /*freezeFirstLayer=*/true);
  TrainingOptions options;
  options.optimizer = OptimizerOptions::adamW(0.05, 0.01);
  options.compile.target = TargetKind::Cpu;
  auto created = Trainer::create(*model, options);
  REQUIRE(created);
  Trainer &trainer = *created;
  CHECK(trainer.program().frozen == std::vector<std::string>{"hidden.weight", "hidden.bias"});
  CHECK(trainer.program().trainable == std::vector<std::string>{"out.weight", "out.bias"});

  std::vector<NamedTensors> batches;
  for (uint64_t i = 0; i < 4; ++i)
    batches.push_back(test::separableBatch(shape, 40 + i));
  testing::TempDir dir;
  std::string path = dir.file("checkpoint.safetensors");
  for (int step = 0; step < 2; ++step) {
    REQUIRE(trainer.setLearningRate(0.05 / (step + 1))); // a schedule: no recompile
    REQUIRE(trainer.step(batches[step]));
  }
  REQUIRE(trainer.saveCheckpoint(path));
  CHECK(dir.entries() == std::set<std::string>{"checkpoint.safetensors"}); // no temporary left
  NamedTensors afterTwo = trainer.params().value();
  for (int step = 2; step < 4; ++step) {
    REQUIRE(trainer.setLearningRate(0.05 / (step + 1)));
    REQUIRE(trainer.step(batches[step]));
  }
  NamedTensors uninterrupted = trainer.params().value();
  NamedTensors uninterruptedState = trainer.optimizerState().value();

  // Frozen parameters are bitwise the model's; trainable ones moved.
  for (const std::string &name : trainer.program().frozen)
    CHECK(sameBits(uninterrupted.at(name), model->paramValues().at(name)));
  for (const std::string &name : trainer.program().trainable)
    CHECK_FALSE(sameBits(uninterrupted.at(name), afterTwo.at(name)));

  // Resume in a fresh trainer, as a restarted job would, and replay steps 3 and 4.
  auto resumedOrError = Trainer::create(*model, options);
  REQUIRE(resumedOrError);
  Trainer &resumed = *resumedOrError;
  REQUIRE(resumed.loadCheckpoint(path));
  CHECK(resumed.stepCount() == 2);
  CHECK(resumed.learningRate() == 0.05 / 2);
  NamedTensors loaded = resumed.params().value();
  for (const auto &[name, value] : afterTwo)
    CHECK(sameBits(loaded.at(name), value));
  for (int step = 2; step < 4; ++step) {
    REQUIRE(resumed.setLearningRate(0.05 / (step + 1)));
    REQUIRE(resumed.step(batches[step]));
  }
  NamedTensors resumedParams = resumed.params().value();
  NamedTensors resumedState = resumed.optimizerState().value();
  for (const auto &[name, value] : uninterrupted)
    CHECK(sameBits(resumedParams.at(name), value));
  for (const auto &[name, value] : uninterruptedState)
    CHECK(sameBits(resumedState.at(name), value));

  {
    INFO("a checkpoint of another setup is refused and changes nothing");
    auto state = readCheckpoint(path);
    REQUIRE(state);
    state->tensors.erase(std::string(stateName("v", "out.bias")));
    std::string partial = dir.file("partial.safetensors");
    REQUIRE(writeCheckpoint(partial, *state));
    NamedTensors params = trainer.params().value();
    auto loaded = trainer.loadCheckpoint(partial);
    REQUIRE_FALSE(loaded);
    CHECK_THAT(loaded.error().message(), Catch::Contains("lacks 'train.v.out.bias'"));
    CHECK(trainer.stepCount() == 4);
    NamedTensors after = trainer.params().value();
    for (const auto &[name, value] : params)
      CHECK(sameBits(after.at(name), value));
  }
  {
    INFO("a damaged checkpoint is refused, naming the file, and changes nothing");
    std::string damaged = dir.file("damaged.safetensors");
    std::filesystem::copy_file(path, damaged);
    {
      std::fstream file(damaged, std::ios::in | std::ios::out | std::ios::binary);
      file.seekp(-3, std::ios::end);
      file.put('\x7f');
    }
    auto loaded = trainer.loadCheckpoint(damaged);
    REQUIRE_FALSE(loaded);
    CHECK_THAT(loaded.error().message(),
               Catch::StartsWith("checkpoint " + damaged + ": checksum mismatch"));
    CHECK(trainer.stepCount() == 4);
  }
  {
    INFO("batches with a wrong name, shape or dtype are errors naming the input");
    NamedTensors batch = batches[0];
    batch.erase("labels");
    auto missing = trainer.step(batch);
    REQUIRE_FALSE(missing);
    CHECK_THAT(missing.error().message(), Catch::Contains("lacks the input 'labels' (i32[5])"));
    batch["labels"] = HostTensor(DType::I64, {5});
    auto dtype = trainer.step(batch);
    REQUIRE_FALSE(dtype);
    CHECK_THAT(dtype.error().message(),
               Catch::Contains("input 'labels' is i64[5], the model expects i32[5]"));
    batch["labels"] = HostTensor(DType::I32, {6});
    CHECK_FALSE(trainer.step(batch));
    batch["labels"] = batches[0].at("labels");
    batch["extra"] = HostTensor(DType::F32, {1});
    auto unknown = trainer.step(batch);
    REQUIRE_FALSE(unknown);
    CHECK_THAT(unknown.error().message(),
               Catch::Contains("'extra', which is not an input of the model"));
    CHECK(trainer.stepCount() == 4);
    CHECK_FALSE(trainer.setLearningRate(-0.1));
    CHECK(trainer.learningRate() == 0.05 / 4);
  }
}

TEST_CASE("training a model without a usable loss or trainable parameter is an error",
          "[training]") {
  TrainingOptions options;
  options.compile.target = TargetKind::Cpu;
  test::MlpShape shape;
  auto model = test::buildMlp(shape);

  options.lossOutput = "cost";
  CHECK_THAT(errorOf(*model, options),
             Catch::Contains("no output named 'cost'") && Catch::Contains("logits, loss"));
  options.lossOutput = "logits";
  CHECK_THAT(errorOf(*model, options),
             Catch::Contains("the loss output 'logits' must be a float scalar, got f32[6,3]"));
  options.lossOutput = "loss";

  Graph allFrozen("frozen");
  Tensor x = allFrozen.input("x", {2, 3});
  Tensor w = allFrozen.param("w", HostTensor(DType::F32, {3, 1}), /*trainable=*/false);
  allFrozen.output("loss", reduceSum(matmul(x, w), {0, 1}));
  CHECK_THAT(errorOf(allFrozen, options), Catch::Contains("no trainable parameter"));

  Graph reserved("reserved");
  Tensor input = reserved.input("train.x", {2});
  Tensor weight = reserved.param("w", HostTensor(DType::F32, {2}));
  reserved.output("loss", reduceSum(mul(input, weight), {0}));
  CHECK_THAT(errorOf(reserved, options), Catch::Contains("reserved prefix 'train.'"));

  options.accumulationSteps = 0;
  CHECK_THAT(errorOf(*model, options), Catch::Contains("accumulationSteps must be >= 1"));
  options.accumulationSteps = 1;
  options.clipGlobalNorm = -1.0;
  CHECK_THAT(errorOf(*model, options), Catch::Contains("clipGlobalNorm must be > 0"));
}
