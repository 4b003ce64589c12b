// Training in fp16 with dynamic loss scaling: a forced overflow skips the
// step without touching anything, the scale backs off, training recovers and
// the scale grows again after enough finite steps.
#include "CompileTestUtil.h"
#include "TrainingTestUtil.h"

#include "compiler/training/Trainer.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace kiln;
using namespace kiln::training;

namespace {

bool bitwiseEqual(const NamedTensors &a, const NamedTensors &b) {
  if (a.size() != b.size())
    return false;
  for (const auto &[name, value] : a) {
    auto other = b.find(name);
    if (other == b.end() || other->second.byteSize() != value.byteSize() ||
        std::memcmp(other->second.bytes().data(), value.bytes().data(), value.byteSize()) != 0)
      return false;
  }
  return true;
}

} // namespace

TEST_CASE("fp16 loss scaling skips a step on overflow, backs off and recovers", "[training]") {
  test::MlpShape shape{.batch = 8, .features = 5, .hidden = 6, .classes = 3};
  auto model = test::buildMlp(shape);
  TrainingOptions options;
  options.optimizer = OptimizerOptions::adam(0.01);
  // On the simulator device the state stays there: the program itself keeps
  // the old values on a skipped step.
  options.compile.target = GENERATE(TargetKind::Cpu, TargetKind::Sim);
  CAPTURE(targetKindName(options.compile.target));
  options.compile.precision = passes::PrecisionPolicy::Fp16Mixed; // scaling is on by default
  // 2^24 makes the backward products overflow f16 (largest 65504); the scale
  // then halves per skipped step until the gradients fit (2^18 for this model).
  options.lossScale.initialScale = std::ldexp(1.0, 24);
  options.lossScale.growthInterval = 3;
  auto created = Trainer::create(*model, options);
  REQUIRE(created);
  Trainer &trainer = *created;
  REQUIRE(trainer.program().lossScaling);

  NamedTensors batch = test::separableBatch(shape, 5);
  double scale = std::ldexp(1.0, 24);
  int skipped = 0;
  for (; skipped < 24; ++skipped) {
    NamedTensors params = trainer.params().value(), state = trainer.optimizerState().value();
    auto result = trainer.step(batch);
    REQUIRE(result);
    CHECK(result->lossScale == scale);
    CHECK(std::isfinite(result->loss)); // the forward pass is unscaled
    if (!result->skipped)
      break;
    // Skipped: parameters, state and step count untouched, bit for bit.
    CHECK(bitwiseEqual(trainer.params().value(), params));
    CHECK(bitwiseEqual(trainer.optimizerState().value(), state));
    CHECK(trainer.stepCount() == 0);
    scale /= 2;
    CHECK(trainer.lossScale() == scale);
  }
  CAPTURE(skipped);
  CHECK(skipped >= 1);  // the huge scale did overflow
  CHECK(skipped < 24);  // and training recovered once the scale fit
  CHECK(trainer.stepCount() == 1);
  // Two more finite steps complete the growth interval of 3: the scale doubles.
  double first = 0, last = 0;
  for (int step = 0; step < 2; ++step) {
    auto result = trainer.step(batch);
    REQUIRE(result);
    CHECK_FALSE(result->skipped);
    (step == 0 ? first : last) = result->loss;
  }
  CHECK(trainer.lossScale() == 2 * scale);
  CHECK(trainer.stepCount() == 3);
  CHECK(last < first);
}
