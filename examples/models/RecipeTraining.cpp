// trainRecipe: the epoch loop around a Trainer.
#include "examples/models/RecipeTraining.h"

#include "frontend/data/Prefetcher.h"
#include "runtime/dist/Communicator.h"
#include "support/Elapsed.h"

#include <fmt/ranges.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <unistd.h>

namespace kiln::examples {

namespace {

using Clock = std::chrono::steady_clock;

/// The first `limit` rows of every tensor (all when limit is 0 or larger).
NamedTensors firstRows(const NamedTensors &examples, int64_t limit) {
  if (limit <= 0)
    return examples;
  NamedTensors result;
  for (const auto &[name, tensor] : examples) {
    int64_t rows = std::min(limit, tensor.shape()[0]);
    std::vector<int64_t> shape = tensor.shape();
    shape[0] = rows;
    HostTensor head(tensor.dtype(), shape);
    std::memcpy(head.bytes().data(), tensor.bytes().data(),
                static_cast<size_t>(rows) * (tensor.byteSize() / tensor.shape()[0]));
    result.emplace(name, std::move(head));
  }
  return result;
}

/// Loss and metric of a batch from the model's logits [B, C] or [B, L, C]
/// against the labels [B] or [B, L], over the first `valid` rows, in fp64:
/// {summed cross entropy, correct predictions, predictions}.
struct BatchScore {
  double lossSum = 0;
  int64_t correct = 0, count = 0;
};

BatchScore scoreBatch(const HostTensor &logits, const HostTensor &labels, int64_t valid) {
  int64_t classes = logits.shape().back();
  int64_t perRow = labels.numElements() / labels.shape()[0];
  BatchScore score;
  std::vector<double> values = logits.toDoubles();
  std::vector<double> targets = labels.toDoubles();
  for (int64_t i = 0; i < valid * perRow; ++i) {
    const double *row = values.data() + i * classes;
    int64_t best = std::max_element(row, row + classes) - row;
    double top = row[best], sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(row[c] - top);
    auto label = static_cast<int64_t>(targets[i]);
    KILN_CHECK(label >= 0 && label < classes, "the data loaders check labels against the classes");
    score.lossSum += top + std::log(sum) - row[label];
    score.correct += best == label;
    ++score.count;
  }
  return score;
}

/// Data parallel: each rank scored its shard; every rank gets the sum over the
/// ranks (counts stay exact in f64). Nothing to do without a communicator.
Expected<void> sumOverRanks(runtime::dist::Communicator *ranks, BatchScore &score) {
  if (!ranks || ranks->size() == 1)
    return {};
  double values[] = {score.lossSum, static_cast<double>(score.correct),
                     static_cast<double>(score.count)};
  // Host buffers: through the host communicator, which NCCL's is opened over.
  KILN_TRY_VOID(ranks->hostCommunicator().allReduce(values, std::size(values), DType::F64,
                                                    runtime::dist::ReduceOp::Sum));
  score = {values[0], static_cast<int64_t>(values[1]), static_cast<int64_t>(values[2])};
  return {};
}

double metricOf(TrainingMetric metric, const BatchScore &score) {
  if (score.count == 0)
    return 0;
  return metric == TrainingMetric::Accuracy ? static_cast<double>(score.correct) / score.count
                                            : score.lossSum / score.count;
}

std::string metricText(TrainingMetric metric, double value) {
  return metric == TrainingMetric::Accuracy ? fmt::format("acc {:5.2f}%", 100 * value)
                                            : fmt::format("loss/word {:.3f}", value);
}

void drawProgress(std::FILE *out, const EpochReport &epoch, int64_t epochs, int64_t done,
                  int64_t total, TrainingMetric metric) {
  if (!out)
    return;
  constexpr int kWidth = 24;
  int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
  fmt::print(out, "\repoch {}/{} [{}{}] {}/{} loss {:.4f} {} {:.0f} samples/s", epoch.epoch,
             epochs, std::string(filled, '='), std::string(kWidth - filled, ' '), done, total,
             epoch.trainLoss, metricText(metric, epoch.trainMetric), epoch.samplesPerSecond);
  std::fflush(out);
}

/// The held-out split through the inference program with `params`: every
/// example once, the last partial batch at its own size (the program's batch
/// is symbolic). Data parallel: each rank runs its shard and the scores are
/// summed over the ranks.
Expected<BatchScore> evaluate(CompiledModel &model, const TrainingRecipe &recipe,
                              const data::DataLoader &loader, const NamedTensors &params,
                              runtime::dist::Communicator *ranks) {
  // Bound once per evaluation, so each batch's run takes only the batch.
  KILN_TRY_VOID(model.bindParams(params));
  BatchScore total;
  data::EpochBatches batches = loader.epoch(0);
  for (int64_t index = 0; index < batches.size(); ++index) {
    KILN_TRY(NamedTensors batch, batches.batch(index));
    int64_t valid = batch.begin()->second.shape()[0];
    // A rank can be left no rows of the last partial batch.
    if (valid == 0)
      continue;
    KILN_TRY(NamedTensors outputs, model.run(batch));
    BatchScore score = scoreBatch(outputs.at("logits"), batch.at(recipe.labelInput), valid);
    total.lossSum += score.lossSum;
    total.correct += score.correct;
    total.count += score.count;
  }
  KILN_TRY_VOID(sumOverRanks(ranks, total));
  return total;
}

/// --last-batch train: one process, one micro-batch per step and the CPU (checked before
/// anything loads or compiles; a model whose training program cannot take a
/// symbolic batch says so when the Trainer is created).
Expected<void> checkLastBatchTraining(const TrainingRecipe &recipe,
                                      const RecipeTrainingOptions &options,
                                      const runtime::dist::Communicator *ranks,
                                      int64_t accumulation) {
  if (!options.trainLastBatch)
    return {};
  auto refuse = [&](std::string why) {
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{}: training on the last partial batch {}", recipe.name, why));
  };
  if (accumulation > 1)
    return refuse("takes one micro-batch per step (--accumulate 1): micro-batches of one "
                  "step are averaged as equals");
  if (ranks && ranks->size() > 1)
    return refuse("takes one process: a rank can be left no rows of it");
  TargetKind target = options.training.compile.target;
  if (target == TargetKind::Sim || target == TargetKind::Cuda)
    return refuse("runs on the CPU only so far (--target cpu): its weight gradients sum over "
                  "the run's rows, which the GPU's GEMMs take at static sizes");
  return {};
}

/// The compile options of a program with a symbolic batch that runs full
/// batches but one: a single size bucket, whose kernels are chosen at the full
/// batch (a bucket per power of two would compile for sizes that never run).
training::TrainingOptions onePartialBatchCompile(training::TrainingOptions options) {
  options.compile.sizeBuckets = std::vector<int64_t>{};
  return options;
}

/// What a checkpoint's run entries are named after, and which a resume may change.
struct RunEntry {
  std::string_view flag; ///< the kiln train flag (without "--"), or "recipe"
  bool mayChange;
  /// An entry added later: the value a checkpoint written before it stands for.
  std::string_view absentMeans = {};
};
constexpr RunEntry kRunEntries[] = {
    {"recipe", false},         {"seed", false},
    {"optimizer", false},      {"precision", false},
    {"image-size", false},     {"width-divisor", false},
    {"batch", true},           {"limit", true},
    {"accumulate", true},      {"momentum", true},
    {"nesterov", true},        {"weight-decay", true},
    {"label-smoothing", true}, {"clip-norm", true},
    {"augment", true},         {"last-batch", true, "drop"},
};
constexpr std::string_view kEpochsCompletedEntry = "run.epochs-completed";

std::string runKey(std::string_view flag) { return fmt::format("run.{}", flag); }

} // namespace

io::SafetensorsMetadata describeRun(const TrainingRecipe &recipe,
                                    const RecipeTrainingOptions &options) {
  const training::OptimizerOptions &optimizer = options.training.optimizer;
  auto text = [](auto value) { return fmt::format("{}", value); };
  std::map<std::string_view, std::string> values = {
      {"recipe", recipe.name},
      {"seed", text(options.seed)},
      {"optimizer", std::string(training::optimizerKindName(optimizer.kind))},
      {"precision", std::string(passes::precisionPolicyName(options.training.compile.precision))},
      {"image-size", text(options.model.imageSize)},
      {"width-divisor", text(options.model.widthDivisor)},
      {"batch", text(options.model.batch)},
      {"limit", options.trainLimit > 0 ? text(options.trainLimit) : "all"},
      {"accumulate", text(options.training.accumulationSteps)},
      {"momentum", text(optimizer.momentum)},
      {"nesterov", optimizer.nesterov ? "on" : "off"},
      {"weight-decay", text(optimizer.weightDecay)},
      {"label-smoothing", text(options.model.labelSmoothing)},
      {"clip-norm",
       options.training.clipGlobalNorm ? text(*options.training.clipGlobalNorm) : "none"},
      {"augment", options.augmentation.any() ? "on" : "off"},
      {"last-batch", options.trainLastBatch ? "train" : "drop"},
  };
  io::SafetensorsMetadata run;
  for (const RunEntry &entry : kRunEntries)
    run.emplace(runKey(entry.flag), values.at(entry.flag));
  return run;
}

Expected<ResumePlan> planResume(const TrainingRecipe &recipe,
                                const RecipeTrainingOptions &options,
                                const training::CheckpointState &checkpoint,
                                std::string_view where) {
  auto fail = [&](const std::string &what) {
    return makeError(ErrorCode::InvalidArgument, fmt::format("resume from {}: {}", where, what));
  };
  ResumePlan plan;
  auto completed = checkpoint.run.find(kEpochsCompletedEntry);
  if (completed == checkpoint.run.end())
    return fail(fmt::format("the checkpoint has no '{}': it was not written by kiln train",
                            kEpochsCompletedEntry));
  const std::string &epochsText = completed->second;
  auto [end, error] = std::from_chars(epochsText.data(), epochsText.data() + epochsText.size(),
                                      plan.epochsCompleted);
  if (error != std::errc() || end != epochsText.data() + epochsText.size() ||
      plan.epochsCompleted < 0)
    return fail(fmt::format("'{}' is '{}', expected a count >= 0", kEpochsCompletedEntry,
                            epochsText));

  io::SafetensorsMetadata now = describeRun(recipe, options);
  std::vector<std::string> refused;
  for (const RunEntry &entry : kRunEntries) {
    std::string key = runKey(entry.flag);
    auto saved = checkpoint.run.find(key);
    if (saved == checkpoint.run.end() && entry.absentMeans.empty())
      return fail(fmt::format("the checkpoint has no '{}': it was not written by this kiln "
                              "train",
                              key));
    std::string savedValue =
        saved == checkpoint.run.end() ? std::string(entry.absentMeans) : saved->second;
    const std::string &value = now.at(key);
    if (savedValue == value)
      continue;
    std::string name = entry.flag == "recipe" ? "the recipe" : fmt::format("--{}", entry.flag);
    if (!entry.mayChange)
      refused.push_back(
          fmt::format("{} is {}, the checkpoint's run had {}", name, value, savedValue));
    else
      plan.notes.push_back(fmt::format("{} {} (the checkpoint's run had {}): the remaining "
                                       "epochs use {}",
                                       name, value, savedValue, value));
  }
  if (!refused.empty())
    return fail(fmt::format("{}; a resumed run keeps the recipe, --seed, --optimizer, "
                            "--precision, --image-size and --width-divisor (train without "
                            "--resume to change them)",
                            fmt::join(refused, "; ")));
  plan.learningRate = checkpoint.learningRate;
  if (options.overrideLearningRate && options.training.optimizer.learningRate !=
                                          checkpoint.learningRate) {
    plan.learningRate = options.training.optimizer.learningRate;
    plan.notes.push_back(fmt::format("--lr {} replaces the checkpoint's learning rate {}",
                                     plan.learningRate, checkpoint.learningRate));
  }
  return plan;
}

Expected<RecipeTrainingReport> trainRecipe(const TrainingRecipe &recipe,
                                           const RecipeTrainingOptions &options) {
  RecipeTrainingReport report;
  if (recipe.loader.imageName.empty() && options.augmentation.any())
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{}: augmentation needs image inputs", recipe.name));
  runtime::dist::Communicator *ranks = options.training.communicator.get();
  int64_t accumulation = std::max<int64_t>(1, options.training.accumulationSteps);
  KILN_TRY_VOID(checkLastBatchTraining(recipe, options, ranks, accumulation));
  std::shared_ptr<const TrainingData> data = options.preloaded;
  if (!data) {
    KILN_TRY(TrainingData loaded, recipe.loadData(options.dataDir, options.model));
    data = std::make_shared<const TrainingData>(std::move(loaded));
  }
  report.dataDescription = data->description;
  data::DataShard shard;
  if (ranks)
    shard = {ranks->rank(), ranks->size()};
  NamedTensors trainExamples = firstRows(data->train, options.trainLimit);
  NamedTensors testExamples = firstRows(data->test, options.testLimit);

  data::DataLoaderOptions trainLoading = recipe.loader;
  trainLoading.batchSize = options.model.batch;
  trainLoading.dropLast = !options.trainLastBatch;
  trainLoading.seed = options.seed;
  trainLoading.augmentation = options.augmentation;
  trainLoading.shard = shard;
  KILN_TRY(data::DataLoader trainLoader, data::DataLoader::create(trainExamples, trainLoading));
  data::DataLoaderOptions testLoading = recipe.loader;
  testLoading.batchSize = options.model.batch;
  testLoading.shuffle = false;
  testLoading.dropLast = false;
  testLoading.shard = shard;
  KILN_TRY(data::DataLoader testLoader, data::DataLoader::create(testExamples, testLoading));
  report.trainExamples = trainLoader.numExamples();
  report.testExamples = testLoader.numExamples();
  // A step takes `accumulation` micro-batches; an epoch's leftover batches are dropped.
  report.stepsPerEpoch = trainLoader.numBatches() / accumulation;
  if (report.stepsPerEpoch == 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{}: {} training examples make no step of {} micro-batches of {}",
                                 recipe.name, trainLoader.numExamples(), accumulation,
                                 options.model.batch));

  Clock::time_point compileStart = Clock::now();
  // Each rank compiles for its share of the global batch (the same every step
  // when an epoch's last partial batch is dropped; with --last-batch train the
  // program's batch is symbolic, up to that share).
  RecipeOptions modelOptions = options.model;
  modelOptions.batch = trainLoader.shardBatchSize();
  modelOptions.symbolicBatch = options.trainLastBatch;
  Graph graph(recipe.name, options.seed);
  recipe.build(graph, modelOptions);
  KILN_TRY_VOID(graph.finalize());
  KILN_TRY(training::Trainer trainer,
           training::Trainer::create(graph, onePartialBatchCompile(options.training)));
  // Evaluation runs every held-out batch at its own size on one compile: the
  // model with a symbolic batch where the recipe builds one.
  modelOptions.symbolicBatch = true;
  Graph evalGraph(recipe.name, options.seed);
  recipe.build(evalGraph, modelOptions);
  KILN_TRY_VOID(evalGraph.finalize());
  CompileReport evalReport;
  KILN_TRY(CompiledModel evalModel,
           compile(evalGraph.ir(), onePartialBatchCompile(options.training).compile, &evalReport));
  report.compileSeconds = secondsSince(compileStart);
  report.target = evalReport.target;

  // A terminal gets a progress line redrawn every 10 steps; a log gets one line per epoch.
  bool interactive = options.progress && ::isatty(::fileno(options.progress));
  int64_t firstEpoch = 0;
  if (!options.resumePath.empty()) {
    KILN_TRY(training::CheckpointState checkpoint,
             training::readCheckpoint(options.resumePath, &trainer.checkpointLayout()));
    KILN_TRY(ResumePlan plan, planResume(recipe, options, checkpoint, options.resumePath));
    checkpoint.learningRate = plan.learningRate;
    KILN_TRY_VOID(trainer.restore(checkpoint, options.resumePath));
    // Recorded, not derived from the step count: the batch or limit may have changed.
    firstEpoch = plan.epochsCompleted;
    report.resumedEpochs = firstEpoch;
  }
  io::SafetensorsMetadata run = describeRun(recipe, options);

  for (int64_t epochIndex = firstEpoch; epochIndex < options.epochs; ++epochIndex) {
    EpochReport epoch;
    epoch.epoch = epochIndex + 1;
    KILN_TRY(auto prefetcher, data::Prefetcher::start(trainLoader.epoch(epochIndex)));
    BatchScore trainScore;
    double lossSum = 0;
    int64_t steps = 0, rowsTrained = 0;
    Clock::time_point start = Clock::now();
    std::vector<NamedTensors> microBatches;
    KILN_TRY(std::optional<NamedTensors> batch, prefetcher->next());
    while (batch) {
      microBatches.push_back(std::move(*batch));
      KILN_TRY(batch, prefetcher->next());
      if (static_cast<int64_t>(microBatches.size()) < accumulation)
        continue;
      int64_t stepIndex = epochIndex * report.stepsPerEpoch + steps;
      if (options.beforeStep)
        KILN_TRY_VOID(options.beforeStep(stepIndex, microBatches));
      // On a device the next batch's copy overlaps this step.
      if (batch)
        KILN_TRY_VOID(trainer.prefetch(*batch));
      KILN_TRY(training::StepResult step, trainer.step(microBatches));
      lossSum += step.loss; // the global batch's (the Trainer sums it over the ranks)
      ++steps;
      epoch.skippedSteps += step.skipped;
      for (size_t i = 0; i < microBatches.size(); ++i) {
        const HostTensor &labels = microBatches[i].at(recipe.labelInput);
        rowsTrained += labels.shape()[0];
        BatchScore score =
            scoreBatch(step.outputs.at(i).at("logits"), labels, labels.shape()[0]);
        trainScore.correct += score.correct;
        trainScore.count += score.count;
        trainScore.lossSum += score.lossSum;
      }
      microBatches.clear();
      epoch.seconds = secondsSince(start);
      epoch.trainLoss = lossSum / steps;
      epoch.trainMetric = metricOf(recipe.metric, trainScore);
      // Full global batches, or (one process, --last-batch train) the rows trained.
      double examples = options.trainLastBatch
                            ? static_cast<double>(rowsTrained)
                            : static_cast<double>(steps * accumulation * options.model.batch);
      epoch.samplesPerSecond = examples / std::max(epoch.seconds, 1e-9);
      // Mid-epoch lines show this rank's accuracy; the last one the global batches'.
      if (interactive && steps % 10 == 0 && steps < report.stepsPerEpoch)
        drawProgress(options.progress, epoch, options.epochs, steps, report.stepsPerEpoch,
                     recipe.metric);
    }
    KILN_TRY_VOID(sumOverRanks(ranks, trainScore));
    epoch.trainMetric = metricOf(recipe.metric, trainScore);
    drawProgress(options.progress, epoch, options.epochs, steps, report.stepsPerEpoch,
                 recipe.metric);
    KILN_TRY(NamedTensors params, trainer.params());
    // A step's loss catches divergence as it happens; this catches the last
    // update of the epoch, before it is evaluated or checkpointed.
    if (!options.training.allowNonFinite)
      if (std::optional<std::string> bad = training::findNonFinite(params))
        return makeError(ErrorCode::InvalidArgument,
                         fmt::format("epoch {}, after training step {}: parameter {}: training "
                                     "diverged (a learning rate too large?)",
                                     epoch.epoch, trainer.stepCount(), *bad));
    KILN_TRY(BatchScore testScore, evaluate(evalModel, recipe, testLoader, params, ranks));
    epoch.testLoss = testScore.count ? testScore.lossSum / testScore.count : 0;
    epoch.testMetric = metricOf(recipe.metric, testScore);
    if (options.progress)
      fmt::print(options.progress, " | test loss {:.4f} {}{}\n", epoch.testLoss,
                 metricText(recipe.metric, epoch.testMetric),
                 epoch.skippedSteps ? fmt::format(" ({} steps skipped: gradients not finite)",
                                                  epoch.skippedSteps)
                                    : "");
    if (!options.checkpointPath.empty()) {
      run.insert_or_assign(std::string(kEpochsCompletedEntry), fmt::format("{}", epoch.epoch));
      KILN_TRY_VOID(trainer.saveCheckpoint(options.checkpointPath, run));
    }
    report.epochs.push_back(epoch);
  }
  KILN_TRY(report.params, trainer.params());
  return report;
}

} // namespace kiln::examples
