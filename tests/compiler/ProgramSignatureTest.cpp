// The training program's signature (compiler/training/ProgramSignature.h):
// ranks with uneven shards agree on it when they built the same program, and
// tell apart programs that differ only in a constant.
#include "ThreadedRanks.h"
#include "TrainingTestUtil.h"

#include "compiler/training/ProgramSignature.h"
#include "ir/graph/Printer.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace kiln;
using namespace kiln::training;

namespace {

/// A rank's data-parallel training program (2 ranks: all_reduce and the
/// shard weight in it) of the MLP with `rows` rows.
TrainingProgram mlpProgram(int64_t rows, double labelSmoothing = 0.0) {
  test::MlpShape shape{.batch = rows, .features = 5, .hidden = 7, .classes = 3};
  TrainingOptions options;
  options.optimizer = OptimizerOptions::sgd(0.1, 0.9);
  options.compile.target = TargetKind::Cpu;
  options.communicator = test::ThreadedRanks::create(2)->communicator(0);
  auto program = buildTrainingProgram(*test::buildMlp(shape, false, labelSmoothing), options);
  REQUIRE(program);
  return std::move(*program);
}

/// A regression whose loss is a reduce_mean over [rows, 2]: its gradient
/// scales by 1/(rows * 2).
TrainingProgram regressionProgram(int64_t rows) {
  auto graph = std::make_unique<Graph>("regression", 3);
  Tensor x = graph->input("x", {rows, 4});
  Tensor target = graph->input("target", {rows, 2});
  nn::Dense dense(2);
  graph->output("loss", nn::meanSquaredError(dense(*graph, x), target));
  TrainingOptions options;
  options.optimizer = OptimizerOptions::sgd(0.05);
  options.compile.target = TargetKind::Cpu;
  options.communicator = test::ThreadedRanks::create(2)->communicator(0);
  auto program = buildTrainingProgram(*graph, options);
  REQUIRE(program);
  return std::move(*program);
}

TrainingOptions sameOptions() {
  TrainingOptions options;
  options.optimizer = OptimizerOptions::sgd(0.1, 0.9);
  return options;
}

} // namespace

TEST_CASE("uneven shards of one program agree on its signature", "[dist][training]") {
  // A global batch of 11 on 2 ranks: 6 and 5 rows, so the printed programs
  // differ (shapes, the loss's -1/rows) and the batch-free signature is used.
  std::vector<int64_t> plan{6, 5};
  TrainingProgram six = mlpProgram(6), five = mlpProgram(5);
  CHECK(ir::printGraph(*six.step) != ir::printGraph(*five.step));
  std::string text = trainingProgramSignature(six, sameOptions(), plan);
  CHECK(text == trainingProgramSignature(five, sameOptions(), plan));
  CHECK(trainingProgramHash(six, sameOptions(), plan) ==
        trainingProgramHash(five, sameOptions(), plan));
  // The loss's mean is written as a scale of the batch; the other constants
  // (the momentum, a relu's zero) keep their values.
  CHECK_THAT(text, Catch::Contains("-1/(B*1)") && Catch::Contains("[0.9]"));
  CHECK_THAT(text, !Catch::Contains("0.16666") && !Catch::Contains("-0.2]"));

  // Equal shards compare the printed program itself.
  std::vector<int64_t> even{6, 6};
  CHECK_THAT(trainingProgramSignature(six, sameOptions(), even),
             Catch::Contains(ir::printGraph(*six.step)));
}

TEST_CASE("uneven shards that differ only in a constant have other signatures",
          "[dist][training]") {
  // --label-smoothing changes two constants of the loss and nothing else: no
  // shape, no option of the Trainer.
  std::vector<int64_t> plan{6, 5};
  TrainingProgram plain = mlpProgram(6), smoothed = mlpProgram(5, 0.1);
  CHECK(trainingProgramHash(plain, sameOptions(), plan) !=
        trainingProgramHash(smoothed, sameOptions(), plan));
  // Both smoothed: the same again.
  CHECK(trainingProgramHash(mlpProgram(6, 0.1), sameOptions(), plan) ==
        trainingProgramHash(smoothed, sameOptions(), plan));
}

TEST_CASE("a constant equal to a shard's batch scale is written alike on every shard",
          "[dist][training]") {
  // Label smoothing 0.6 over 3 classes weighs the other classes 0.2, which is
  // 1/rows on the 5-row shard but not on the 6-row one: both ranks try the
  // plan's rows in the same order, so both write it as 1/(B*1).
  std::vector<int64_t> plan{5, 6};
  CHECK(trainingProgramSignature(mlpProgram(5, 0.6), sameOptions(), plan) ==
        trainingProgramSignature(mlpProgram(6, 0.6), sameOptions(), plan));
}

TEST_CASE("a reduce_mean over the batch scales its gradient by 1/(rows * m)",
          "[dist][training]") {
  // The mean squared error over [rows, 2]: its gradient's 1/(rows * 2) on 6
  // and 7 rows is one scale of the batch.
  std::vector<int64_t> plan{7, 6};
  TrainingOptions options;
  options.optimizer = OptimizerOptions::sgd(0.05);
  std::string text = trainingProgramSignature(regressionProgram(7), options, plan);
  CHECK_THAT(text, Catch::Contains("1/(B*2)"));
  CHECK(text == trainingProgramSignature(regressionProgram(6), options, plan));
}
