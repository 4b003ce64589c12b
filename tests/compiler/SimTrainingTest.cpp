// The training program on the SIMT simulator (GPU kernels, run on the CPU):
// the same steps as on the CPU, within f32 tolerances.
#include "CompileTestUtil.h"
#include "TrainingTestUtil.h"

#include "compiler/training/Trainer.h"

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
    // Different kernels sum in different orders: f32 tolerances.
    for (const auto &[name, value] : cpu->params())
      for (int64_t i = 0; i < value.numElements(); ++i)
        CHECK(sim->params().at(name).getDouble(i) ==
              Approx(value.getDouble(i)).epsilon(1e-5).margin(1e-6));
  }
}
