// Training on the real GPU against the same steps on the CPU: parameters and
// optimizer state resident on the device, batches uploaded ahead on the copy
// stream, gradient accumulation, and fp16 loss scaling skipping a step there.
#include "GpuTestDevice.h"

#include "compiler/TrainingTestUtil.h"
#include "compiler/training/Trainer.h"

#include <catch2/catch.hpp>

#include <cmath>

namespace kiln::test {
namespace {

using training::OptimizerOptions;
using training::Trainer;
using training::TrainingOptions;


} // namespace

TEST_CASE("training steps on the GPU match the CPU", "[gpu][training]") {
  GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  INFO("backend " << (backend == GpuBackend::Llvm ? "llvm" : "nvrtc"));
  MlpShape shape{.batch = 32, .features = 9, .hidden = 33, .classes = 5};
  auto model = buildMlp(shape);
  TrainingOptions options;
  options.optimizer = OptimizerOptions::adam(0.01);
  options.clipGlobalNorm = 1.0;
  options.compile.target = TargetKind::Cpu;
  auto cpu = Trainer::create(*model, options);
  REQUIRE(cpu);
  options.compile.target = TargetKind::Cuda;
  options.compile.gpuBackend = backend;
  auto gpu = Trainer::create(*model, options);
  REQUIRE(gpu);
  std::vector<NamedTensors> batches;
  for (uint64_t i = 0; i < 6; ++i)
    batches.push_back(separableBatch(shape, 200 + i));
  for (size_t step = 0; step < batches.size(); ++step) {
    CAPTURE(step);
    if (step + 1 < batches.size())
      REQUIRE(gpu->prefetch(batches[step + 1]));
    auto onGpu = gpu->step(batches[step]);
    auto onCpu = cpu->step(batches[step]);
    REQUIRE((onGpu && onCpu));
    CHECK(onGpu->loss == Approx(onCpu->loss).epsilon(1e-4));
    REQUIRE(onGpu->gradNorm);
    CHECK(*onGpu->gradNorm == Approx(*onCpu->gradNorm).epsilon(1e-4));
    checkParamsClose(*cpu, *gpu, 1e-4);
  }
}

TEST_CASE("gradient accumulation on the GPU matches the CPU", "[gpu][training]") {
  MlpShape whole{.batch = 16, .features = 5, .hidden = 12, .classes = 3};
  MlpShape micro = whole;
  micro.batch = 8;
  auto model = buildMlp(micro, /*freezeFirstLayer=*/true);
  TrainingOptions options;
  options.optimizer = OptimizerOptions::sgd(0.05, 0.9);
  options.accumulationSteps = 2;
  options.compile.target = TargetKind::Cpu;
  auto cpu = Trainer::create(*model, options);
  REQUIRE(cpu);
  options.compile.target = TargetKind::Cuda;
  auto gpu = Trainer::create(*model, options);
  REQUIRE(gpu);
  for (uint64_t step = 0; step < 3; ++step) {
    NamedTensors batch = separableBatch(whole, 50 + step);
    std::vector<NamedTensors> parts = {sliceBatch(batch, 0, 8), sliceBatch(batch, 8, 16)};
    REQUIRE(gpu->prefetch(parts[0]));
    auto onGpu = gpu->step(parts);
    auto onCpu = cpu->step(parts);
    REQUIRE((onGpu && onCpu));
    CHECK(onGpu->loss == Approx(onCpu->loss).epsilon(1e-4));
    checkParamsClose(*cpu, *gpu, 1e-4);
  }
}

TEST_CASE("fp16 loss scaling on the GPU skips a step without touching the state",
          "[gpu][training]") {
  MlpShape shape{.batch = 8, .features = 5, .hidden = 6, .classes = 3};
  auto model = buildMlp(shape);
  TrainingOptions options;
  options.optimizer = OptimizerOptions::adam(0.01);
  options.compile.target = TargetKind::Cuda;
  options.compile.precision = passes::PrecisionPolicy::Fp16Mixed;
  options.lossScale.initialScale = std::ldexp(1.0, 24); // overflows f16 in the backward pass
  auto trainer = Trainer::create(*model, options);
  REQUIRE(trainer);
  NamedTensors batch = separableBatch(shape, 5);
  NamedTensors params = trainer->params().value(), state = trainer->optimizerState().value();
  auto first = trainer->step(batch);
  REQUIRE(first);
  REQUIRE(first->skipped);
  NamedTensors after = trainer->params().value(), stateAfter = trainer->optimizerState().value();
  for (const auto &[name, value] : params)
    CHECK(std::ranges::equal(after.at(name).bytes(), value.bytes()));
  for (const auto &[name, value] : state)
    CHECK(std::ranges::equal(stateAfter.at(name).bytes(), value.bytes()));
  CHECK(trainer->stepCount() == 0);
  CHECK(trainer->lossScale() == std::ldexp(1.0, 23));
}

} // namespace kiln::test
