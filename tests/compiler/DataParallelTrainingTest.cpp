// Data-parallel training with N ranks as N threads (ThreadedRanks.h): N
// trainers on the shards of each global batch end where one trainer on the
// global batches ends, and accumulation, frozen parameters, loss scaling,
// clipping, the program check and checkpoints compose with it.
#include "CompileTestUtil.h"
#include "ThreadedRanks.h"
#include "TrainingTestUtil.h"

#include "compiler/training/GradientAllReduce.h"
#include "compiler/training/Trainer.h"
#include "frontend/TempDir.h"
#include "frontend/nn/Conv2D.h"
#include "frontend/nn/Flatten.h"
#include "frontend/nn/Pool2D.h"
#include "ir/graph/Printer.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

using namespace kiln;
using namespace kiln::training;

namespace {

/// Builds the model with `rows` rows per batch.
using ModelBuilder = std::function<std::unique_ptr<Graph>(int64_t rows)>;
/// Makes global batch number `index` of `rows` rows.
using BatchMaker = std::function<NamedTensors(int64_t rows, uint64_t index)>;

struct Workload {
  ModelBuilder build;
  BatchMaker batch;
};

/// The MLP with `rows` rows. A builder must not change what it captured: the
/// ranks' threads call it at once.
test::MlpShape mlpShape(int64_t rows) {
  return {.batch = rows, .features = 5, .hidden = 7, .classes = 3};
}

Workload mlpWorkload() {
  return {[](int64_t rows) { return test::buildMlp(mlpShape(rows)); },
          [](int64_t rows, uint64_t index) {
            return test::separableBatch(mlpShape(rows), 1000 + index);
          }};
}

/// Conv(4, 3x3, relu) MaxPool Flatten Dense(3) on 1x8x8 images.
Workload cnnWorkload() {
  auto build = [](int64_t rows) {
    auto graph = std::make_unique<Graph>("cnn", 11);
    Tensor x = graph->input("x", {rows, 1, 8, 8});
    Tensor labels = graph->input("labels", {rows}, DType::I32);
    nn::Conv2D conv(4, {3, 3}, nn::Activation::Relu);
    nn::MaxPool2D pool;
    nn::Flatten flatten;
    nn::Dense dense(3);
    Tensor logits = dense(*graph, flatten(*graph, pool(*graph, conv(*graph, x))));
    graph->output("logits", logits);
    graph->output("loss", nn::softmaxCrossEntropy(logits, labels));
    return graph;
  };
  auto batch = [](int64_t rows, uint64_t index) {
    Rng rng(2000 + index);
    HostTensor x = HostTensor::randomUniform(DType::F32, {rows, 1, 8, 8}, rng);
    HostTensor labels(DType::I32, {rows});
    for (int64_t n = 0; n < rows; ++n)
      labels.setDouble(n, static_cast<double>(rng.nextU64() % 3));
    return NamedTensors{{"x", x}, {"labels", labels}};
  };
  return {build, batch};
}

/// Rank r's rows [begin, end) of `rows`: the first rows % n ranks one more.
std::pair<int64_t, int64_t> shardOf(int64_t rows, int ranks, int rank) {
  int64_t base = rows / ranks, extra = rows % ranks;
  int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

/// What one rank (or the single trainer) ended with.
struct RunResult {
  NamedTensors params;
  std::vector<StepResult> steps;
  NamedTensors frozenAtStart;
};

/// Trains `steps` steps of `k` global micro-batches of `rows` rows: one
/// trainer when `ranks` is 1 and there is no communicator, else every rank on
/// its shards. Ranks other than 0 start from other parameters (rank 0's are
/// broadcast at create). `between` runs after every step.
using StepHook = std::function<Expected<void>(Trainer &, int step)>;
Expected<RunResult> trainRank(const Workload &work, TrainingOptions options, int64_t rows,
                              int steps, int ranks, int rank,
                              std::shared_ptr<runtime::dist::Communicator> communicator,
                              int firstStep = 0, const StepHook &before = {}) {
  auto [begin, end] = shardOf(rows, ranks, rank);
  auto model = work.build(end - begin);
  if (rank != 0) {
    Rng rng(77 + static_cast<uint64_t>(rank));
    for (const auto &[name, value] : model->paramValues())
      KILN_TRY_VOID(model->setParamValue(
          name, HostTensor::randomUniform(value.dtype(), value.shape(), rng)));
  }
  options.communicator = std::move(communicator);
  KILN_TRY(Trainer trainer, Trainer::create(*model, options));
  RunResult result;
  KILN_TRY(result.frozenAtStart, trainer.params());
  for (int step = firstStep; step < firstStep + steps; ++step) {
    if (before)
      KILN_TRY_VOID(before(trainer, step));
    std::vector<NamedTensors> micro;
    for (int64_t i = 0; i < options.accumulationSteps; ++i) {
      NamedTensors global =
          work.batch(rows, static_cast<uint64_t>(step * options.accumulationSteps + i));
      micro.push_back(ranks == 1 ? global : test::sliceBatch(global, begin, end));
    }
    KILN_TRY(StepResult stepped, trainer.step(micro));
    result.steps.push_back(std::move(stepped));
  }
  KILN_TRY(result.params, trainer.params());
  return result;
}

RunResult trainSingle(const Workload &work, const TrainingOptions &options, int64_t rows,
                      int steps) {
  auto result = trainRank(work, options, rows, steps, 1, 0, nullptr);
  if (!result)
    FAIL(result.error().str());
  return std::move(*result);
}

/// Every rank's result, failing the test with the first rank's error.
std::vector<RunResult> succeeded(std::vector<Expected<RunResult>> results) {
  std::vector<RunResult> out;
  for (auto &result : results) {
    if (!result)
      FAIL(result.error().str());
    out.push_back(std::move(*result));
  }
  return out;
}

std::vector<RunResult> trainRanks(const Workload &work, const TrainingOptions &options,
                                  int64_t rows, int steps, int ranks) {
  auto group = test::ThreadedRanks::create(ranks);
  auto results = group->run([&](int rank, auto communicator) {
    return trainRank(work, options, rows, steps, ranks, rank, std::move(communicator));
  });
  return succeeded(std::move(results));
}

bool sameBits(const HostTensor &a, const HostTensor &b) {
  return a.byteSize() == b.byteSize() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0;
}

/// f32 training of the same global batches with the gradients summed in
/// another order (a weighted sum of shard means instead of one mean): the
/// parameters agree to a few f32 roundings per step.
constexpr double kTolerance = 2e-5;

void checkClose(const NamedTensors &want, const NamedTensors &got) {
  REQUIRE(want.size() == got.size());
  for (const auto &[name, value] : want) {
    INFO(name);
    for (int64_t i = 0; i < value.numElements(); ++i)
      CHECK(got.at(name).getDouble(i) ==
            Approx(value.getDouble(i)).epsilon(kTolerance).margin(kTolerance / 10));
  }
}

/// Every rank bitwise equal to rank 0 (the same reduced gradients, the same
/// update) and within kTolerance of the single trainer.
void checkRanksMatch(const RunResult &single, const std::vector<RunResult> &ranks) {
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    INFO("rank " << rank);
    for (const auto &[name, value] : ranks[0].params)
      CHECK(sameBits(ranks[rank].params.at(name), value));
    REQUIRE(ranks[rank].steps.size() == single.steps.size());
    for (size_t step = 0; step < single.steps.size(); ++step) {
      INFO("step " << step);
      const StepResult &want = single.steps[step], &got = ranks[rank].steps[step];
      CHECK(got.loss == Approx(want.loss).epsilon(kTolerance));
      CHECK(got.skipped == want.skipped);
      REQUIRE(got.gradNorm.has_value() == want.gradNorm.has_value());
      if (want.gradNorm)
        CHECK(*got.gradNorm == Approx(*want.gradNorm).epsilon(kTolerance));
    }
  }
  checkClose(single.params, ranks[0].params);
}

TrainingOptions cpuOptions(OptimizerOptions optimizer) {
  TrainingOptions options;
  options.optimizer = optimizer;
  options.compile.target = TargetKind::Cpu;
  return options;
}

int countAllReduce(const ir::Graph &graph, int64_t &elements) {
  int count = 0;
  elements = 0;
  for (const ir::Node *node : graph.nodes())
    if (node->kind() == ir::OpKind::AllReduce) {
      ++count;
      elements += node->type().numElements();
    }
  return count;
}

} // namespace

TEST_CASE("gradient buckets close at their caps, the first one small", "[dist][training]") {
  std::vector<int64_t> sizes = {4, 4, 100, 8, 8, 8, 30, 2};
  using Buckets = std::vector<std::vector<size_t>>;
  CHECK(planGradientBuckets(sizes, 6, 20) == Buckets{{0, 1}, {2}, {3, 4, 5}, {6}, {7}});
  CHECK(planGradientBuckets(sizes, 1000, 1000) == Buckets{{0, 1, 2, 3, 4, 5, 6, 7}});
  CHECK(planGradientBuckets(sizes, 1, 1).size() == sizes.size());
  CHECK(planGradientBuckets({}, 1, 1).empty());
}

TEST_CASE("the training program places all_reduce only with several ranks", "[dist][training]") {
  test::MlpShape shape{.batch = 4, .features = 5, .hidden = 7, .classes = 3};
  auto model = test::buildMlp(shape, /*freezeFirstLayer=*/true);
  TrainingOptions options = cpuOptions(OptimizerOptions::adam(0.01));
  options.clipGlobalNorm = 1.0;
  auto alone = buildTrainingProgram(*model, options);
  REQUIRE(alone);
  // One rank, or none: the program is the same, byte for byte.
  options.communicator = test::ThreadedRanks::create(1)->communicator(0);
  auto one = buildTrainingProgram(*model, options);
  REQUIRE(one);
  CHECK(ir::printGraph(*one->step) == ir::printGraph(*alone->step));
  int64_t elements = 0;
  CHECK(countAllReduce(*one->step, elements) == 0);
  CHECK_FALSE(one->dataParallel);

  // Two ranks: the trainable gradients (out.weight 7x3, out.bias 3) and never
  // the frozen ones, in one bucket (far below 1 MiB), reduced before the norm.
  options.communicator = test::ThreadedRanks::create(2)->communicator(0);
  auto two = buildTrainingProgram(*model, options);
  REQUIRE(two);
  CHECK(two->dataParallel);
  CHECK(countAllReduce(*two->step, elements) == 1);
  CHECK(elements == 7 * 3 + 3);
  REQUIRE(two->step->findInput(kShardWeightInput));
  CHECK(two->gradientBuckets.size() == 1);
  for (const auto &bucket : two->gradientBuckets)
    for (const std::string &name : bucket)
      CHECK_FALSE(name.starts_with("hidden."));

  // Tiny caps: one bucket per gradient, in the backward pass's order of
  // production (the last layer's first).
  auto full = test::buildMlp(shape);
  options.firstBucketBytes = 1;
  options.bucketBytes = 1;
  auto split = buildTrainingProgram(*full, options);
  REQUIRE(split);
  CHECK(countAllReduce(*split->step, elements) == 4);
  CHECK(elements == 5 * 7 + 7 + 7 * 3 + 3);
  REQUIRE(split->gradientBuckets.size() == 4);
  CHECK(split->gradientBuckets.front().front().starts_with("out."));
  CHECK(split->gradientBuckets.back().front().starts_with("hidden."));
}

TEST_CASE("2 and 3 ranks on shards of the global batches end where one trainer ends",
          "[dist][training]") {
  auto [name, work, rows] = GENERATE(table<std::string, Workload, int64_t>(
      {{"mlp", mlpWorkload(), 10}, {"cnn", cnnWorkload(), 7}}));
  CAPTURE(name, rows); // neither 10 nor 7 is a multiple of 3
  TrainingOptions options = cpuOptions(OptimizerOptions::sgd(0.3, 0.9));
  // A clip below the gradients' norm: every step is clipped by the global norm.
  options.clipGlobalNorm = 0.05;
  constexpr int kSteps = 3;
  RunResult single = trainSingle(work, options, rows, kSteps);
  for (const StepResult &step : single.steps)
    CHECK(*step.gradNorm > 0.05);
  for (int ranks : {2, 3}) {
    CAPTURE(ranks);
    checkRanksMatch(single, trainRanks(work, options, rows, kSteps, ranks));
  }
  // One bucket per gradient instead of one concat: the same result.
  options.firstBucketBytes = options.bucketBytes = 1;
  checkRanksMatch(single, trainRanks(work, options, rows, kSteps, 3));
}

TEST_CASE("data parallel composes with gradient accumulation and frozen parameters",
          "[dist][training]") {
  Workload frozenMlp{[](int64_t rows) {
                       return test::buildMlp(mlpShape(rows), /*freezeFirstLayer=*/true);
                     },
                     mlpWorkload().batch};
  TrainingOptions options = cpuOptions(OptimizerOptions::adam(0.05));
  options.accumulationSteps = 2;
  RunResult single = trainSingle(frozenMlp, options, 8, 2);
  auto group = test::ThreadedRanks::create(3);
  auto results = group->run([&](int rank, auto communicator) {
    return trainRank(frozenMlp, options, 8, 2, 3, rank, std::move(communicator));
  });
  std::vector<RunResult> ranks = succeeded(std::move(results));
  checkRanksMatch(single, ranks);
  // Frozen parameters: rank 0's everywhere (broadcast at start, though the
  // other ranks' models started elsewhere) and never changed.
  for (const RunResult &rank : ranks)
    for (const char *frozen : {"hidden.weight", "hidden.bias"}) {
      CHECK(sameBits(rank.params.at(frozen), single.params.at(frozen)));
      CHECK(sameBits(rank.frozenAtStart.at(frozen), single.params.at(frozen)));
    }
  // Reduced once per step, in the update program, and only the trainable
  // gradients: the program's collectives are f32 ones of out's 7x3 + 3 values.
  for (int rank = 0; rank < 3; ++rank) {
    int gradientReductions = 0;
    for (const auto &call : group->calls(rank))
      if (call.collective == "allReduce" && call.dtype == DType::F32) {
        ++gradientReductions;
        CHECK(call.count == 7 * 3 + 3);
      }
    CHECK(gradientReductions == 2);
  }
}

TEST_CASE("an overflow on one rank makes every rank skip the step", "[dist][training]") {
  Workload work = mlpWorkload();
  TrainingOptions options = cpuOptions(OptimizerOptions::adam(0.05));
  options.compile.precision = passes::PrecisionPolicy::Fp16Mixed; // loss scaling on
  options.lossScale.initialScale = 1024;
  constexpr int kOverflowStep = 1, kOverflowRank = 2;
  auto group = test::ThreadedRanks::create(3);
  std::vector<std::vector<NamedTensors>> paramsBefore(3);
  auto results = group->run([&](int rank, auto communicator) {
    // Rank 2 alone sees an infinite pixel in step 1: its gradients overflow.
    Workload poisoned = work;
    if (rank == kOverflowRank)
      poisoned.batch = [&](int64_t rows, uint64_t index) {
        NamedTensors batch = work.batch(rows, index);
        if (index == kOverflowStep)
          batch.at("x").setDouble(batch.at("x").numElements() - 1, // rank 2's last row
                                  std::numeric_limits<double>::infinity());
        return batch;
      };
    StepHook record = [&, rank](Trainer &trainer, int) -> Expected<void> {
      KILN_TRY(NamedTensors params, trainer.params());
      paramsBefore[static_cast<size_t>(rank)].push_back(std::move(params));
      return {};
    };
    return trainRank(poisoned, options, 10, 3, 3, rank, std::move(communicator), 0, record);
  });
  for (int rank = 0; rank < 3; ++rank) {
    CAPTURE(rank);
    if (!results[rank])
      FAIL(results[rank].error().str());
    const RunResult &run = *results[rank];
    CHECK_FALSE(run.steps[0].skipped);
    CHECK(run.steps[kOverflowStep].skipped);
    CHECK_FALSE(run.steps[2].skipped);
    CHECK(run.steps[kOverflowStep].lossScale == 1024);
    CHECK(run.steps[2].lossScale == 512); // every rank backed off
    CHECK(run.steps[2].stepCount == 2);
    // The skipped step changed nothing, and the ranks stay identical.
    for (const auto &[name, value] : paramsBefore[rank][kOverflowStep])
      CHECK(sameBits(paramsBefore[rank][kOverflowStep + 1].at(name), value));
    for (const auto &[name, value] : results[0]->params)
      CHECK(sameBits(run.params.at(name), value));
  }
}

TEST_CASE("ranks that built different programs refuse to train", "[dist][training]") {
  // Even shards compare the printed programs; uneven ones the batch-free
  // signature. Rank 1 trains another hidden size, clips at another norm, or
  // smooths its labels (a constant of the loss, nothing else).
  enum class Difference { Shape, Clip, LabelSmoothing };
  for (int64_t rows : {10, 11}) {
    for (Difference difference :
         {Difference::Shape, Difference::Clip, Difference::LabelSmoothing}) {
      CAPTURE(rows, static_cast<int>(difference));
      auto group = test::ThreadedRanks::create(2);
      auto results = group->run([&](int rank, auto communicator) -> Expected<Trainer> {
        auto [begin, end] = shardOf(rows, 2, rank);
        test::MlpShape shape{.batch = end - begin, .features = 5, .hidden = 7, .classes = 3};
        TrainingOptions options = cpuOptions(OptimizerOptions::sgd(0.1));
        options.clipGlobalNorm = 1.0;
        double labelSmoothing = 0.0;
        if (rank == 1 && difference == Difference::Shape)
          shape.hidden = 8;
        if (rank == 1 && difference == Difference::Clip)
          options.clipGlobalNorm = 2.0;
        if (rank == 1 && difference == Difference::LabelSmoothing)
          labelSmoothing = 0.1;
        options.communicator = std::move(communicator);
        return Trainer::create(*test::buildMlp(shape, false, labelSmoothing), options);
      });
      for (auto &result : results) {
        REQUIRE_FALSE(result);
        CHECK_THAT(result.error().message(),
                   Catch::Contains("the ranks compiled different programs: rank ") &&
                       Catch::Contains("rank 0 has") && Catch::Contains("rank 1 has"));
      }
    }
  }
}

TEST_CASE("uneven shards of one program with the same constants train", "[dist][training]") {
  // 11 rows on 2 ranks (6 and 5), both smoothing their labels: the loss's
  // -1/rows differs, the smoothing's constants do not, and the ranks agree.
  auto group = test::ThreadedRanks::create(2);
  auto results = group->run([&](int rank, auto communicator) -> Expected<StepResult> {
    auto [begin, end] = shardOf(11, 2, rank);
    test::MlpShape shape{.batch = end - begin, .features = 5, .hidden = 7, .classes = 3};
    TrainingOptions options = cpuOptions(OptimizerOptions::sgd(0.1));
    options.communicator = std::move(communicator);
    KILN_TRY(Trainer trainer, Trainer::create(*test::buildMlp(shape, false, 0.1), options));
    return trainer.step(test::sliceBatch(test::separableBatch({.batch = 11, .features = 5,
                                                               .hidden = 7, .classes = 3},
                                                              5),
                                         begin, end));
  });
  for (auto &result : results)
    REQUIRE(result);
  CHECK(results[0]->loss == results[1]->loss);
}

TEST_CASE("a checkpoint written by 2 ranks resumes on 3 where one trainer goes on",
          "[dist][training]") {
  Workload work = mlpWorkload();
  TrainingOptions options = cpuOptions(OptimizerOptions::adam(0.05));
  options.clipGlobalNorm = 0.5;
  RunResult single = trainSingle(work, options, 10, 4);
  testing::TempDir dir;
  std::string path = dir.file("ranks.safetensors");

  auto two = test::ThreadedRanks::create(2);
  auto saved = two->run([&](int rank, auto communicator) {
    StepHook save = [&](Trainer &trainer, int step) -> Expected<void> {
      return step == 2 ? trainer.saveCheckpoint(path) : Expected<void>{};
    };
    // Steps 0 and 1, then the hook saves before step 2 (which runs too).
    return trainRank(work, options, 10, 3, 2, rank, std::move(communicator), 0, save);
  });
  for (auto &result : saved)
    if (!result)
      FAIL(result.error().str());
  CHECK(dir.entries() == std::set<std::string>{"ranks.safetensors"});

  auto three = test::ThreadedRanks::create(3);
  auto resumed = three->run([&](int rank, auto communicator) {
    StepHook load = [&](Trainer &trainer, int step) -> Expected<void> {
      return step == 2 ? trainer.loadCheckpoint(path) : Expected<void>{};
    };
    return trainRank(work, options, 10, 2, 3, rank, std::move(communicator), 2, load);
  });
  std::vector<RunResult> ranks = succeeded(std::move(resumed));
  for (const RunResult &rank : ranks) {
    CHECK(rank.steps.back().stepCount == 4);
    for (const auto &[name, value] : ranks[0].params)
      CHECK(sameBits(rank.params.at(name), value));
  }
  checkClose(single.params, ranks[0].params);

  // Rank 0 cannot write: every rank fails, the others naming rank 0.
  auto failing = test::ThreadedRanks::create(2);
  auto refused = failing->run([&](int rank, auto communicator) -> Expected<RunResult> {
    StepHook save = [&](Trainer &trainer, int) {
      return trainer.saveCheckpoint(dir.file("missing/ckpt.safetensors"));
    };
    return trainRank(work, options, 10, 1, 2, rank, std::move(communicator), 0, save);
  });
  REQUIRE_FALSE(refused[0]);
  REQUIRE_FALSE(refused[1]);
  CHECK_THAT(refused[1].error().message(),
             Catch::Contains("writing checkpoint") && Catch::Contains("failed on rank 0"));
  CHECK_THAT(refused[0].error().message(), !Catch::Contains("failed on rank 0"));
}

TEST_CASE("a bucket costs a concat, the collective and a copy out per gradient", "[dist][training]") {
  // The MLP's 4 gradients (66 f32): one bucket, or one bucket per gradient.
  test::MlpShape shape{.batch = 4, .features = 5, .hidden = 7, .classes = 3};
  auto model = test::buildMlp(shape);
  TrainingOptions options = cpuOptions(OptimizerOptions::adam(0.01));
  options.clipGlobalNorm = 1.0;
  auto plan = [&](int variant) {
    if (variant >= 1)
      options.communicator = test::ThreadedRanks::create(2)->communicator(0);
    if (variant == 2)
      options.firstBucketBytes = options.bucketBytes = 1;
    auto program = buildTrainingProgram(*model, options);
    REQUIRE(program);
    auto compiled = compile(*program->step, options.compile);
    REQUIRE(compiled);
    int64_t bytes = 0, collectives = 0;
    for (const auto &buffer : compiled->plan().buffers)
      bytes += buffer.bytes;
    for (const auto &step : compiled->plan().steps)
      collectives += step.kind == runtime::StepKind::AllReduce ? 1 : 0;
    return std::tuple{static_cast<int64_t>(compiled->numKernels()), bytes, collectives};
  };
  auto [alone, aloneBytes, none] = plan(0);
  auto [bucket, bucketBytes, one] = plan(1);
  auto [split, splitBytes, four] = plan(2);
  CAPTURE(alone, bucket, split, aloneBytes, bucketBytes, splitBytes);
  CHECK(none == 0);
  CHECK(one == 1);
  CHECK(four == 4);
  constexpr int64_t kGradients = 4, kGradientBytes = 66 * 4;
  // The weight multiplies fuse into the gradients' kernels or the concat; out
  // of the bucket, one copy per gradient (a slice, with its reshape fused).
  CHECK(bucket - alone <= 2 + kGradients);
  CHECK(bucketBytes - aloneBytes <= 3 * kGradientBytes);
  CHECK(split - alone <= 2 * kGradients);
  CHECK(splitBytes - aloneBytes <= 2 * kGradientBytes);
}

TEST_CASE("data-parallel training refuses what it cannot shard or reduce", "[dist][training]") {
  TrainingOptions options = cpuOptions(OptimizerOptions::sgd(0.1));
  // An input that is not batch-major: the rows of a shard are unknown.
  auto model = std::make_unique<Graph>("unbatched", 3);
  Tensor x = model->input("x", {4, 5});
  Tensor labels = model->input("labels", {4}, DType::I32);
  Tensor temperature = model->input("temperature", {1});
  nn::Dense dense(3);
  Tensor logits = dense(*model, x) * temperature;
  model->output("loss", nn::softmaxCrossEntropy(logits, labels));
  auto group = test::ThreadedRanks::create(2);
  auto refused = group->run([&](int, auto communicator) {
    TrainingOptions ranked = options;
    ranked.communicator = std::move(communicator);
    return Trainer::create(*model, ranked);
  });
  for (auto &result : refused) {
    REQUIRE_FALSE(result);
    CHECK(result.error().code() == ErrorCode::ShapeMismatch);
    CHECK_THAT(result.error().message(),
               Catch::Contains("every model input must be batch-major with the same rows") &&
                   Catch::Contains("'temperature' is f32[1]"));
  }
  // A device communicator with no host one beneath it: the Trainer's own
  // exchanges need host buffers.
  auto device = test::ThreadedRanks::create(2, std::chrono::seconds(30),
                                            runtime::dist::MemorySpace::Device);
  options.communicator = device->communicator(0);
  auto alone = Trainer::create(*test::buildMlp({.batch = 4}), options);
  REQUIRE_FALSE(alone);
  CHECK_THAT(alone.error().message(), Catch::Contains("has no host communicator beside it"));
  CHECK(device->calls(0).empty());

  // The program's memory space and the communicator's must agree.
  for (TargetKind target : {TargetKind::Cpu, TargetKind::Sim}) {
    bool onDevice = target == TargetKind::Sim;
    CAPTURE(onDevice);
    auto host = test::ThreadedRanks::create(2);
    auto wrong = test::ThreadedRanks::create(2, std::chrono::seconds(30),
                                             runtime::dist::MemorySpace::Device);
    auto results = host->run([&](int rank, auto hostCommunicator) {
      TrainingOptions ranked = options;
      ranked.compile.target = target;
      ranked.communicator = onDevice ? hostCommunicator : wrong->communicator(rank, hostCommunicator);
      return Trainer::create(*test::buildMlp({.batch = 4}), ranked);
    });
    for (auto &result : results) {
      REQUIRE_FALSE(result);
      CHECK_THAT(result.error().message(),
                 Catch::Contains(onDevice ? "keeps its tensors on the device, but the "
                                            "communicator (rank"
                                          : "keeps its tensors on the host, but the "
                                            "communicator (rank"));
    }
  }
}

TEST_CASE("data parallel on the simulator device: a device communicator beside a host one",
          "[dist][training][sim]") {
  // As with NCCL over MPI: the program's all_reduce steps get the device
  // communicator (simulator memory, reduced in place), the trainer's own
  // exchanges its host communicator.
  Workload work = mlpWorkload();
  TrainingOptions options = cpuOptions(OptimizerOptions::sgd(0.3, 0.9));
  options.compile.target = TargetKind::Sim;
  options.clipGlobalNorm = 0.05;
  RunResult single = trainSingle(work, options, 9, 2);
  auto host = test::ThreadedRanks::create(2);
  auto device = test::ThreadedRanks::create(2, std::chrono::seconds(30),
                                            runtime::dist::MemorySpace::Device);
  auto results = host->run([&](int rank, auto hostCommunicator) {
    return trainRank(work, options, 9, 2, 2, rank,
                     device->communicator(rank, std::move(hostCommunicator)));
  });
  std::vector<RunResult> ranks = succeeded(std::move(results));
  checkRanksMatch(single, ranks);
  // The gradients went through the device communicator, once per step.
  int64_t gradientReductions = 0;
  for (const auto &call : device->calls(0))
    gradientReductions += call.collective == "allReduce" ? 1 : 0;
  CHECK(gradientReductions == 2);
  // The host one carried the rest: rows, hash and outcomes (i64), the loss
  // (f64), and the parameters' broadcast; no f32 reduction.
  for (const auto &call : host->calls(0))
    if (call.collective == "allReduce")
      CHECK(call.dtype != DType::F32);
}

TEST_CASE("with overlapped buckets, ranks still equal one trainer and profile every bucket",
          "[dist][training]") {
  // One bucket per gradient: 4 buckets, the last layer's first, each started
  // before the backward pass the next one needs (CollectiveLaunchOrderTest).
  Workload work = mlpWorkload();
  TrainingOptions options = cpuOptions(OptimizerOptions::sgd(0.3, 0.9));
  options.clipGlobalNorm = 0.05;
  options.firstBucketBytes = options.bucketBytes = 1;

  // Training: the same result as one trainer, and every step's profile has
  // one collective per bucket, in bucket order, on the communication thread.
  constexpr int kSteps = 2;
  RunResult single = trainSingle(work, options, 10, kSteps);
  std::vector<std::vector<runtime::RunProfile>> profiles(2);
  auto group = test::ThreadedRanks::create(2);
  auto results = group->run([&](int rank, auto communicator) {
    TrainingOptions ranked = options;
    ranked.profiles = &profiles[static_cast<size_t>(rank)];
    return trainRank(work, ranked, 10, kSteps, 2, rank, std::move(communicator));
  });
  checkRanksMatch(single, succeeded(std::move(results)));
  for (const auto &rankProfiles : profiles) {
    REQUIRE(rankProfiles.size() == kSteps);
    for (const runtime::RunProfile &run : rankProfiles) {
      std::vector<std::string> names;
      for (const runtime::ProfileEvent &event : run.events)
        if (event.category == runtime::ProfileCategory::Communication)
          names.push_back(event.name);
      CHECK(names == std::vector<std::string>{"all_reduce bucket 0", "all_reduce bucket 1",
                                              "all_reduce bucket 2", "all_reduce bucket 3"});
    }
  }
}
