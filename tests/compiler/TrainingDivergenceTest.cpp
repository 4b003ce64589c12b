// Divergence: a step whose loss is not finite stops training with an error
// naming the step, unless allowNonFinite; a step the loss scaler skips is not
// divergence.
#include "TrainingTestUtil.h"

#include "compiler/training/Trainer.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>

using namespace kiln;
using namespace kiln::training;

TEST_CASE("a diverging run stops at the step whose loss is not finite", "[training]") {
  test::MlpShape shape{.batch = 8, .features = 5, .hidden = 6, .classes = 3};
  auto model = test::buildMlp(shape);
  TrainingOptions options;
  // Plain SGD at 1e30: the first update sends the weights past f32's range.
  options.optimizer = OptimizerOptions::sgd(1e30);
  options.compile.target = TargetKind::Cpu;
  NamedTensors batch = test::separableBatch(shape, 3);

  auto created = Trainer::create(*model, options);
  REQUIRE(created);
  Trainer &trainer = *created;
  auto first = trainer.step(batch);
  REQUIRE(first); // the initial weights give a finite loss
  CHECK(std::isfinite(first->loss));
  Expected<StepResult> diverged = first;
  int step = 1;
  for (; step < 6 && diverged; ++step)
    diverged = trainer.step(batch);
  REQUIRE_FALSE(diverged);
  CHECK(diverged.error().code() == ErrorCode::InvalidArgument);
  CHECK_THAT(diverged.error().message(),
             Catch::StartsWith(fmt::format("training step {}: the loss is ", step)) &&
                 Catch::Contains("training diverged"));

  INFO("allowNonFinite keeps going");
  options.allowNonFinite = true;
  auto tolerant = Trainer::create(*model, options);
  REQUIRE(tolerant);
  for (int i = 0; i < 6; ++i) {
    auto result = tolerant->step(batch);
    REQUIRE(result);
    CHECK_FALSE(result->skipped);
  }
  auto last = tolerant->step(batch);
  REQUIRE(last);
  CHECK_FALSE(std::isfinite(last->loss));
  CHECK(tolerant->stepCount() == 7);
  // Such a state is never checkpointed: it could not be resumed.
  auto state = tolerant->checkpointState();
  REQUIRE(state);
  CHECK_FALSE(checkCheckpointValues(*state, "ck"));
}

TEST_CASE("steps the loss scaler skips are not divergence", "[training]") {
  test::MlpShape shape{.batch = 8, .features = 5, .hidden = 6, .classes = 3};
  auto model = test::buildMlp(shape);
  TrainingOptions options;
  options.optimizer = OptimizerOptions::adam(0.01);
  options.compile.target = TargetKind::Cpu;
  // fp16 with a scale of 2^24: the backward products overflow f16, so the
  // first steps are skipped (gradients not finite) and the scale backs off.
  options.compile.precision = passes::PrecisionPolicy::Fp16Mixed;
  options.lossScale.initialScale = std::ldexp(1.0, 24);
  auto created = Trainer::create(*model, options);
  REQUIRE(created);
  NamedTensors batch = test::separableBatch(shape, 4);
  int skipped = 0;
  for (int i = 0; i < 200 && created->stepCount() < 3; ++i) {
    auto result = created->step(batch);
    REQUIRE(result);
    skipped += result->skipped;
  }
  CHECK(skipped >= 1);
  CHECK(created->stepCount() == 3);
}
