// The training program on the SIMT simulator (GPU kernels, run on the CPU):
// the same steps as on the CPU, within f32 tolerances, with the parameters
// and optimizer state resident on the device and batches uploaded ahead.
#include "CompileTestUtil.h"
#include "TrainingTestUtil.h"

#include "compiler/training/Trainer.h"
#include "frontend/TempDir.h"

#include "runtime/sim/SimDevice.h"

#include <catch2/catch.hpp>

using namespace kiln;
using namespace kiln::training;

TEST_CASE("training steps on the simulator match the CPU", "[training][sim]") {
  test::MlpShape shape{.batch = 5, .features = 3, .hidden = 4, .classes = 3};
  auto model = test::buildMlp(shape);
  TrainingOptions options;
  options.optimizer = OptimizerOptions::sgd(0.1, 0.9);
  options.clipGlobalNorm = 1.0;
  options.compile.target = TargetKind::Cpu;
  auto cpu = Trainer::create(*model, options);
  REQUIRE(cpu);
  options.compile.target = TargetKind::Sim;
  auto sim = Trainer::create(*model, options);
  REQUIRE(sim);
  for (uint64_t step = 0; step < 2; ++step) {
    NamedTensors batch = test::separableBatch(shape, 70 + step);
    auto onCpu = cpu->step(batch);
    auto onSim = sim->step(batch);
    REQUIRE(onCpu);
    REQUIRE(onSim);
    CHECK(onSim->loss == Approx(onCpu->loss).epsilon(1e-5));
    test::checkParamsClose(*cpu, *sim, 1e-5); // f32 sums in another order
  }
}

namespace {

int64_t totalBytes(const NamedTensors &tensors) {
  int64_t bytes = 0;
  for (const auto &[name, tensor] : tensors)
    bytes += static_cast<int64_t>(tensor.byteSize());
  return bytes;
}


} // namespace

TEST_CASE("training on the simulator device keeps its state there and uploads batches ahead",
          "[training][sim]") {
  test::MlpShape shape{.batch = 5, .features = 3, .hidden = 256, .classes = 3};
  auto model = test::buildMlp(shape);
  TrainingOptions options;
  options.optimizer = OptimizerOptions::adam(0.01);
  options.compile.target = TargetKind::Cpu;
  auto cpu = Trainer::create(*model, options);
  REQUIRE(cpu);
  options.compile.target = TargetKind::Sim;
  auto sim = Trainer::create(*model, options);
  REQUIRE(sim);
  auto device = sim::sharedSimDevice();
  int64_t stateBytes = totalBytes(sim->params().value()) + totalBytes(sim->optimizerState().value());

  std::vector<NamedTensors> batches;
  for (uint64_t i = 0; i < 4; ++i)
    batches.push_back(test::separableBatch(shape, 90 + i));
  REQUIRE(sim->prefetch(batches[0]));
  for (size_t step = 0; step < batches.size(); ++step) {
    CAPTURE(step);
    sim::SimDevice::Census before = device->census();
    // The next batch's upload is started before this step (as a training
    // loop does); the step finds its own batch already uploaded.
    if (step + 1 < batches.size())
      REQUIRE(sim->prefetch(batches[step + 1]));
    auto onSim = sim->step(batches[step]);
    sim::SimDevice::Census after = device->census();
    auto onCpu = cpu->step(batches[step]);
    REQUIRE(onCpu);
    REQUIRE(onSim);
    CHECK(onSim->loss == Approx(onCpu->loss).epsilon(1e-5));
    test::checkParamsClose(*cpu, *sim, 1e-5);
    // A step moves a batch and the optimizer scalars in, and the loss and
    // logits out: far less than the parameters and state it updates.
    CHECK(after.bytesToDevice - before.bytesToDevice < stateBytes / 4);
    CHECK(after.bytesToHost - before.bytesToHost < stateBytes / 4);
  }

  // A batch uploaded ahead and then not the one stepped on is not used.
  REQUIRE(sim->prefetch(batches[0]));
  auto onSim = sim->step(batches[1]);
  auto onCpu = cpu->step(batches[1]);
  REQUIRE((onSim && onCpu));
  CHECK(onSim->loss == Approx(onCpu->loss).epsilon(1e-5));
  test::checkParamsClose(*cpu, *sim, 1e-5);

  // A checkpoint of the device state restores on the CPU.
  testing::TempDir dir;
  std::string path = dir.file("sim.safetensors");
  REQUIRE(sim->saveCheckpoint(path));
  options.compile.target = TargetKind::Cpu;
  auto restored = Trainer::create(*model, options);
  REQUIRE(restored);
  REQUIRE(restored->loadCheckpoint(path));
  test::checkParamsClose(*restored, *sim, 1e-5);
  CHECK(restored->stepCount() == sim->stepCount());
}

TEST_CASE("gradient accumulation on the simulator device matches the CPU", "[training][sim]") {
  test::MlpShape whole{.batch = 6, .features = 3, .hidden = 8, .classes = 3};
  test::MlpShape micro = whole;
  micro.batch = 3;
  auto model = test::buildMlp(micro, /*freezeFirstLayer=*/true);
  TrainingOptions options;
  options.optimizer = OptimizerOptions::sgd(0.05, 0.9);
  options.accumulationSteps = 2;
  options.compile.target = TargetKind::Cpu;
  auto cpu = Trainer::create(*model, options);
  REQUIRE(cpu);
  options.compile.target = TargetKind::Sim;
  auto sim = Trainer::create(*model, options);
  REQUIRE(sim);
  for (uint64_t step = 0; step < 3; ++step) {
    NamedTensors batch = test::separableBatch(whole, 30 + step);
    std::vector<NamedTensors> parts = {test::sliceBatch(batch, 0, 3),
                                       test::sliceBatch(batch, 3, 6)};
    // Uploading the first micro-batch ahead leaves a slot for the second.
    REQUIRE(sim->prefetch(parts[0]));
    auto onSim = sim->step(parts);
    auto onCpu = cpu->step(parts);
    REQUIRE((onSim && onCpu));
    CHECK(onSim->loss == Approx(onCpu->loss).epsilon(1e-5));
    test::checkParamsClose(*cpu, *sim, 1e-5);
  }
  // The frozen layer never moved.
  NamedTensors params = sim->params().value();
  for (const std::string &name : sim->program().frozen)
    CHECK(std::ranges::equal(params.at(name).bytes(), model->paramValues().at(name).bytes()));
}
