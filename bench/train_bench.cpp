// kiln_train_bench: training-step throughput of the trainable examples
// (examples/models/TrainingRecipes.h) through training::Trainer, after checks
// that the program computes the loss and learns. One JSON object per line on
// stdout; bench/run_train_bench.sh joins them with bench/torch_train.py's.
#include "bench/JsonLines.h"
#include "bench/TimedRuns.h"
#include "compiler/Compile.h"
#include "compiler/training/Trainer.h"
#include "examples/models/TrainingRecipes.h"
#include "frontend/Graph.h"
#include "frontend/Ops.h"
#include "runtime/cpu/ThreadPool.h"
#include "support/Elapsed.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace kiln;
using kiln::bench::jsonString;
using kiln::bench::printLine;
using Clock = std::chrono::steady_clock;

// The timing method, shared with torch_train.py (see bench/README.md).
constexpr bench::TimingBudget kBudget{
    .warmupRuns = 3, .minRuns = 10, .minSeconds = 0.5, .maxSeconds = 5.0, .minRunsWhenSlow = 3};
/// The timed steps cycle over this many fixed random batches.
constexpr int kFixedBatches = 4;

// The checks before timing. A fresh model's logits are small, so its first
// loss is near log(classes) (the loss of the uniform guess); the bound allows
// logits of a few tenths either way. Then kLearnSteps steps on one repeated
// batch must bring the loss to at most kLearnRatio of the first.
/// |loss - log(classes)| <= this * log(classes). Loose enough for vgg-transfer, whose
/// He-initialized frozen base hands the head O(1) features (a fresh loss near 3.5, not 2.3).
constexpr double kFirstLossBound = 0.6;
constexpr int kLearnSteps = 20;
constexpr double kLearnRatio = 0.99;
constexpr double kLearningRate = 1e-3; ///< Adam's, for every recipe (as torch_train.py)
/// The learning rate of the learning check: vgg-transfer's random frozen base
/// gives its head small features, which 1e-3 moves too slowly to see in 20 steps.
constexpr double kCheckLearningRate = 1e-2;

/// A timed workload: a recipe at a batch size.
struct Workload {
  std::string recipe;
  int64_t batch;
  std::string name() const { return fmt::format("{}_b{}", recipe, batch); }
};

/// Issue 8's batches; vgg-transfer at its 32x32 input with VGG16's own widths.
std::vector<Workload> defaultWorkloads() {
  return {{"cnn", 64}, {"mlp", 64}, {"lstm", 32}, {"vgg-transfer", 32}};
}

void printError(std::string_view workload, std::string_view message) {
  printLine(fmt::format(R"({{"kind": "error", "impl": "kiln", "workload": {}, "message": {}}})",
                        jsonString(workload), jsonString(message)));
}

/// The number of classes: the last axis of the "logits" output.
Expected<int64_t> classCount(const ir::Graph &graph) {
  for (const ir::GraphOutput &output : graph.outputs())
    if (output.name == "logits" && !output.value->type().shape.empty())
      return output.value->type().shape.back();
  return makeError(ErrorCode::InvalidArgument, "the recipe's graph has no \"logits\" output");
}

/// A random batch for every input of `graph`: floats standard normal,
/// integers (labels, targets, tokens) uniform in [0, classes).
NamedTensors randomBatch(const ir::Graph &graph, int64_t classes, Rng &rng) {
  NamedTensors batch;
  for (const ir::Value *input : graph.inputs()) {
    const ir::TensorType &type = input->type();
    if (type.dtype == DType::I64 || type.dtype == DType::I32) {
      int64_t count = 1;
      for (int64_t extent : type.shape)
        count *= extent;
      std::vector<double> values(static_cast<size_t>(count));
      for (double &value : values)
        value = static_cast<double>(rng.nextU64() % static_cast<uint64_t>(classes));
      batch.emplace(input->name(), HostTensor::fromDoubles(type.dtype, type.shape, values));
    } else {
      batch.emplace(input->name(), HostTensor::randomNormal(type.dtype, type.shape, rng));
    }
  }
  return batch;
}

/// The target a compile with `options` lands on, from a probe's report.
std::string targetOf(const CompileOptions &options) {
  Graph graph("probe");
  Tensor x = graph.input("x", {4});
  graph.output("y", relu(x));
  CompileReport report;
  if (!graph.finalize())
    return "?";
  auto compiled = compile(graph.ir(), options, &report);
  if (!compiled)
    return fmt::format("unavailable ({})", compiled.error().message());
  return report.target;
}

struct Settings {
  CompileOptions compile;
  std::string precisionName = "fp32";
  std::string target;
};

/// Compiles, checks and times one workload; false when it failed.
bool benchWorkload(const Workload &workload, const Settings &settings) {
  std::string name = workload.name();
  const examples::TrainingRecipe *recipe = examples::findTrainingRecipe(workload.recipe);
  if (!recipe) {
    printError(name, fmt::format("no recipe called {}", workload.recipe));
    return false;
  }
  examples::RecipeOptions modelOptions;
  modelOptions.batch = workload.batch;
  Graph graph(recipe->name, /*seed=*/0);
  recipe->build(graph, modelOptions);
  if (auto ok = graph.finalize(); !ok) {
    printError(name, ok.error().message());
    return false;
  }
  auto classes = classCount(graph.ir());
  if (!classes) {
    printError(name, classes.error().message());
    return false;
  }

  training::TrainingOptions options;
  options.optimizer = training::OptimizerOptions::adam(kLearningRate);
  options.compile = settings.compile;
  Clock::time_point compileStart = Clock::now();
  auto trainer = training::Trainer::create(graph, options);
  double compileSeconds = secondsSince(compileStart);
  if (!trainer) {
    printError(name, fmt::format("compile: {}", trainer.error().message()));
    return false;
  }

  Rng rng(1);
  std::vector<NamedTensors> batches;
  for (int i = 0; i < kFixedBatches; ++i)
    batches.push_back(randomBatch(graph.ir(), *classes, rng));

  // The checks, on the fresh model, before anything is timed.
  double uniformLoss = std::log(static_cast<double>(*classes));
  auto first = trainer->step(batches[0]);
  if (!first) {
    printError(name, fmt::format("step: {}", first.error().message()));
    return false;
  }
  double firstLoss = first->loss;
  if (!std::isfinite(firstLoss) ||
      std::abs(firstLoss - uniformLoss) > kFirstLossBound * uniformLoss) {
    printError(name, fmt::format("check failed: the fresh model's first loss is {}, expected "
                                 "log({}) = {:.4f} within {:.0f}%",
                                 firstLoss, *classes, uniformLoss, kFirstLossBound * 100));
    return false;
  }
  double learnedLoss = firstLoss;
  if (auto ok = trainer->setLearningRate(kCheckLearningRate); !ok) {
    printError(name, ok.error().message());
    return false;
  }
  for (int i = 1; i < kLearnSteps; ++i) {
    auto step = trainer->step(batches[0]);
    if (!step) {
      printError(name, fmt::format("step: {}", step.error().message()));
      return false;
    }
    learnedLoss = step->loss;
  }
  // The loss of the 20th step is that of the parameters after 19 updates.
  if (!std::isfinite(learnedLoss) || learnedLoss > kLearnRatio * firstLoss) {
    printError(name, fmt::format("check failed: after {} steps on one batch the loss is {} "
                                 "(first {}): expected at most {:.0f}% of the first",
                                 kLearnSteps, learnedLoss, firstLoss, kLearnRatio * 100));
    return false;
  }

  if (auto ok = trainer->setLearningRate(kLearningRate); !ok) {
    printError(name, ok.error().message());
    return false;
  }

  // Warm-up, then the timed steps over the fixed batches, as a training loop
  // runs them: the next batch is handed over (on a device: its copy starts)
  // before the step, which returns the loss and the model's outputs to the
  // host; parameters and optimizer state stay where the program runs.
  int next = 0;
  double lastLoss = 0;
  auto seconds = bench::timeRuns(kBudget, [&]() -> Expected<void> {
    int after = (next + 1) % kFixedBatches;
    KILN_TRY_VOID(trainer->prefetch(batches[after]));
    KILN_TRY(training::StepResult step, trainer->step(batches[next]));
    next = after;
    lastLoss = step.loss;
    return {};
  });
  if (!seconds) {
    printError(name, fmt::format("step: {}", seconds.error().message()));
    return false;
  }
  if (!std::isfinite(lastLoss)) {
    printError(name, fmt::format("check failed: the last timed step's loss is {}", lastLoss));
    return false;
  }
  double median = bench::sortedMedian(*seconds);
  std::string check = fmt::format("ok: first loss {:.4f} (log {} = {:.4f}), {:.4f} after {} steps",
                                  firstLoss, *classes, uniformLoss, learnedLoss, kLearnSteps);
  printLine(fmt::format(
      R"({{"kind": "train", "impl": "kiln", "workload": {}, "model": {}, "batch": {}, )"
      R"("precision": {}, "target": {}, "median_ms": {:.6f}, "min_ms": {:.6f}, "runs": {}, )"
      R"("samples_per_s": {:.3f}, "compile_s": {:.6f}, "first_loss": {:.6f}, )"
      R"("learned_loss": {:.6f}, "check": {}}})",
      jsonString(name), jsonString(workload.recipe), workload.batch,
      jsonString(settings.precisionName), jsonString(settings.target), median * 1e3,
      seconds->front() * 1e3, seconds->size(), workload.batch / median, compileSeconds,
      firstLoss, learnedLoss, jsonString(check)));
  return true;
}

constexpr const char *kUsage = R"(usage: kiln_train_bench [--only NAME | --filter TEXT] [--batch N] [--list]
                        [--target cpu|cuda|sim|auto] [--precision P]

Times one training step (Adam, lr 1e-3) of each trainable example with
training::Trainer and prints one JSON object per line (bench/README.md,
"Training"). Before timing, the fresh model's first loss must be within 60% of
log(classes), and 20 steps on one batch must cut the loss by at least 1%.
KILN_NUM_THREADS sets the CPU thread count (default: all cores).
  --only NAME      only the workload NAME (cnn_b64, mlp_b64, lstm_b32, vgg-transfer_b32)
                   or every workload of the recipe NAME
  --filter TEXT    only workloads whose name contains TEXT
  --batch N        every selected recipe at batch N instead of its benchmark batch
  --list           print the workload names, one a line, and exit
  --target T       where the program runs (default auto: the GPU when there is one)
  --precision P    fp32 (default), tf32, bf16-mixed or fp16-mixed
)";

} // namespace

int main(int argc, char **argv) {
  std::string filter, only, targetName = "auto", precisionName = "fp32";
  std::optional<int64_t> batch;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool valued = arg == "--filter" || arg == "--only" || arg == "--target" ||
                  arg == "--precision" || arg == "--batch";
    if (valued && i + 1 < argc) {
      std::string value = argv[++i];
      if (arg == "--filter")
        filter = value;
      else if (arg == "--only")
        only = value;
      else if (arg == "--target")
        targetName = value;
      else if (arg == "--precision")
        precisionName = value;
      else if (int64_t n = std::atoll(value.c_str()); n > 0)
        batch = n;
      else {
        std::fprintf(stderr, "kiln_train_bench: --batch needs a positive number, got %s\n",
                     value.c_str());
        return 2;
      }
    } else if (arg == "--list") {
      list = true;
    } else {
      std::fputs(kUsage, arg == "--help" ? stdout : stderr);
      return arg == "--help" ? 0 : 2;
    }
  }
  std::vector<Workload> workloads = defaultWorkloads();
  if (batch)
    for (Workload &workload : workloads)
      workload.batch = *batch;
  if (list) {
    for (const Workload &workload : workloads)
      fmt::print("{}\n", workload.name());
    return 0;
  }

  Settings settings;
  auto target = parseTargetKind(targetName);
  auto precision = passes::parsePrecisionPolicy(precisionName);
  for (const Error *error : {target ? nullptr : &target.error(),
                             precision ? nullptr : &precision.error()})
    if (error) {
      std::fprintf(stderr, "kiln_train_bench: %s\n", error->message().c_str());
      return 2;
    }
  settings.compile.target = *target;
  settings.compile.precision = *precision;
  settings.precisionName = precisionName;
  settings.target = targetOf(settings.compile);
  printLine(fmt::format(
      R"({{"kind": "info", "impl": "kiln", "threads": {}, "target": {}, "precision": {}}})",
      cpu::ThreadPool::defaultThreadCount(), jsonString(settings.target),
      jsonString(precisionName)));

  bool ok = true;
  for (const Workload &workload : workloads) {
    std::string name = workload.name();
    bool selected = only.empty() ? name.find(filter) != std::string::npos
                                 : name == only || workload.recipe == only;
    if (selected)
      ok = benchWorkload(workload, settings) && ok;
  }
  return ok ? 0 : 1;
}
