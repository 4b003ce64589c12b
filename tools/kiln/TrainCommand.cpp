// kiln train: trains one of the example recipes (model + loss + data) with a
// compiled training program, printing per-epoch progress and test results,
// with atomic checkpoints and resume (docs/training.md); under an MPI launcher
// (or --nproc) as one rank of data-parallel training (docs/distributed.md).
#include "examples/models/RecipeTraining.h"
#include "compiler/training/Checkpoint.h"
#include "frontend/io/Safetensors.h"
#include "runtime/dist/HostCommunicator.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/MpirunLauncher.h"
#include "tools/kiln/RankCommunicator.h"
#include "tools/kiln/RankGpu.h"
#include "tools/kiln/TrainFaultInjection.h"
#include "tools/kiln/TrainProfile.h"

#include <fmt/format.h>

#include <cmath>

namespace kiln::tool {

namespace {

constexpr const char *kTrainHelp = R"(usage: kiln train <recipe> [options]

Trains an example model on its data set with forward, backward and update
compiled into one program, then evaluates it on the held-out split after each
epoch. The recipes:
{}
options:
{}  --epochs N          epochs to train (default: the recipe's)
  --batch N           examples per step (default: the recipe's); with several
                      ranks the global batch, each rank training its shard
  --optimizer NAME    sgd, adam or adamw (default: the recipe's)
  --lr X              learning rate (default: the recipe's)
  --momentum X        sgd: momentum (default 0.9 when --optimizer sgd is given)
  --nesterov          sgd: Nesterov momentum
  --weight-decay X    L2 (sgd, adam) or decoupled (adamw) weight decay
  --label-smoothing X cross-entropy label smoothing (default 0)
  --accumulate K      sum gradients over K micro-batches per update (default 1)
  --last-batch M      an epoch's last partial batch: drop (default) or train, on
                      the same program compiled for a symbolic batch (one
                      process, --accumulate 1; not cnn); evaluation always
                      runs every example, a partial batch at its own size
  --clip-norm X       clip the gradients' global L2 norm to X
  --bucket-mib X      several ranks: the gradients are all-reduced in buckets
                      of at least X MiB (default 25; fractions allowed); one
                      rank reduces nothing and ignores it
  --first-bucket-mib X
                      several ranks: the first bucket's cap (default 1): the
                      last layers' gradients, small so that their all-reduce
                      starts early in backward
  --augment           random horizontal flips and crops (pad 2) of training images
  --seed S            initial weights, shuffling and augmentation (default 0)
  --limit N           train on the first N training examples only
  --test-limit N      evaluate on the first N held-out examples only
  --data DIR          where the data set is (default: the recipe's Debian path)
  --checkpoint FILE   save a checkpoint after every epoch (written atomically)
  --resume FILE       continue from a checkpoint of the same recipe, seed,
                      optimizer, precision and model sizes; other options may
                      change (each change is printed), and --lr replaces the
                      checkpoint's learning rate
  --allow-nonfinite   keep training when a step's loss or gradients are not
                      finite (by default training stops there, naming the step)
  --save-weights FILE write the trained parameters (safetensors) for kiln run
                      and the fashion_mnist_cnn example's --weights
  --image-size N      vgg-transfer: input size, a multiple of 32 (default 32)
  --width-divisor N   vgg-transfer: divide the base's widths (default 1)
  --quiet             no progress line
  --profile[=FILE]    time every kernel and all-reduce of the training steps;
                      print the kernel time and the fraction of all-reduce time
                      hidden behind kernels, and with =FILE write a Chrome trace
  --nproc N           run N ranks of data-parallel training on this machine:
                      mpirun -np N (from PATH) with the other options; under
                      an MPI launcher (mpirun -np N kiln train ...) each
                      process is one rank, and rank 0 alone prints and writes;
                      with --target cuda each rank trains on its local rank's
                      GPU and NCCL sums the gradients
  --help              print this help and exit
exit status: 0 trained, 1 a failure (data, compile, a step, a checkpoint), 2 bad usage
)";

Expected<training::OptimizerOptions> parseOptimizer(const Args &args,
                                                    const examples::TrainingRecipe &recipe) {
  training::OptimizerOptions optimizer = recipe.defaultOptimizer;
  if (std::optional<std::string> name = args.value("--optimizer")) {
    if (*name == "sgd")
      optimizer = training::OptimizerOptions::sgd(0.01, 0.9);
    else if (*name == "adam")
      optimizer = training::OptimizerOptions::adam(1e-3);
    else if (*name == "adamw")
      optimizer = training::OptimizerOptions::adamW(1e-3);
    else
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("--optimizer expects sgd, adam or adamw, got '{}'", *name));
  }
  // Momentum and Nesterov are SGD's; Adam would compile without them, silently.
  for (const char *flag : {"--momentum", "--nesterov"})
    if (args.has(flag) && optimizer.kind != training::OptimizerKind::Sgd)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("{} applies to --optimizer sgd; this run uses {}{}", flag,
                                   training::optimizerKindName(optimizer.kind),
                                   args.has("--optimizer") ? "" : " (the recipe's default)"));
  KILN_TRY(optimizer.learningRate, args.nonNegativeValue("--lr", optimizer.learningRate));
  KILN_TRY(optimizer.momentum, args.nonNegativeValue("--momentum", optimizer.momentum));
  KILN_TRY(optimizer.weightDecay, args.nonNegativeValue("--weight-decay", optimizer.weightDecay));
  optimizer.nesterov = optimizer.nesterov || args.has("--nesterov");
  KILN_TRY_VOID(training::validateOptimizer(optimizer));
  return optimizer;
}

/// --bucket-mib, --first-bucket-mib: a gradient bucket's cap in MiB, as bytes.
/// Fractions are allowed (the example models' gradients are under a MiB, and a
/// benchmark sweeps caps below that); from one byte to 64 GiB.
Expected<int64_t> bucketBytes(const Args &args, const char *flag, int64_t fallback) {
  if (!args.has(flag))
    return fallback;
  constexpr double kMaxMiB = 65536;
  KILN_TRY(double mib, args.nonNegativeValue(flag, 0.0));
  double bytes = std::round(mib * 1048576.0);
  if (bytes < 1 || mib > kMaxMiB)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{} expects a number of MiB from one byte ({:.3g}) to {}, got {}",
                                 flag, 1 / 1048576.0, kMaxMiB, *args.value(flag)));
  return static_cast<int64_t>(bytes);
}

Expected<examples::RecipeTrainingOptions> parseTrainOptions(const Args &args,
                                                            const examples::TrainingRecipe &recipe) {
  examples::RecipeTrainingOptions options;
  // The model-size flags shape only vgg-transfer's model; other recipes would ignore them.
  for (const char *flag : {"--image-size", "--width-divisor"})
    if (args.has(flag) && recipe.name != "vgg-transfer")
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("{} applies to the vgg-transfer recipe, not {}", flag,
                                   recipe.name));
  if (args.has("--augment") && recipe.loader.imageName.empty())
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("--augment needs image inputs; the {} recipe has none",
                                 recipe.name));
  KILN_TRY_VOID(parseTargetOptions(args, options.training.compile));
  KILN_TRY(options.model.batch, args.intValue("--batch", recipe.defaultBatch, 1));
  KILN_TRY(options.epochs, args.intValue("--epochs", recipe.defaultEpochs, 1));
  KILN_TRY(options.model.labelSmoothing, args.nonNegativeValue("--label-smoothing", 0.0));
  // Checked here, before anything compiles: the loss would refuse it later.
  if (options.model.labelSmoothing > 1.0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("--label-smoothing expects a number in [0, 1], got {}",
                                 options.model.labelSmoothing));
  KILN_TRY(options.model.imageSize, args.intValue("--image-size", 32, 32));
  if (options.model.imageSize % 32 != 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("--image-size expects a multiple of 32, got {}",
                                 options.model.imageSize));
  KILN_TRY(options.model.widthDivisor, args.intValue("--width-divisor", 1, 1));
  KILN_TRY(options.training.optimizer, parseOptimizer(args, recipe));
  KILN_TRY(options.training.accumulationSteps, args.intValue("--accumulate", 1, 1));
  if (std::optional<std::string> lastBatch = args.value("--last-batch")) {
    if (*lastBatch != "drop" && *lastBatch != "train")
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("--last-batch expects drop or train, got '{}'", *lastBatch));
    options.trainLastBatch = *lastBatch == "train";
  }
  if (args.has("--clip-norm")) {
    KILN_TRY(double clip, args.nonNegativeValue("--clip-norm", 0.0));
    options.training.clipGlobalNorm = clip;
  }
  KILN_TRY(int64_t seed, args.intValue("--seed", 0, 0));
  options.seed = static_cast<uint64_t>(seed);
  KILN_TRY(options.trainLimit, args.intValue("--limit", 0, 1));
  KILN_TRY(options.testLimit, args.intValue("--test-limit", 0, 1));
  if (args.has("--augment")) {
    options.augmentation.flipProbability = 0.5;
    options.augmentation.cropPadding = 2;
  }
  KILN_TRY(options.training.firstBucketBytes,
           bucketBytes(args, "--first-bucket-mib", options.training.firstBucketBytes));
  KILN_TRY(options.training.bucketBytes,
           bucketBytes(args, "--bucket-mib", options.training.bucketBytes));
  options.training.allowNonFinite = args.has("--allow-nonfinite");
  options.dataDir = args.value("--data").value_or("");
  options.checkpointPath = args.value("--checkpoint").value_or("");
  options.resumePath = args.value("--resume").value_or("");
  options.overrideLearningRate = args.has("--lr");
  KILN_TRY_VOID(training::validateTrainingOptions(options.training));
  return options;
}

/// Where this process's report goes: stdout on rank 0 (or alone), nowhere on
/// the other ranks, which print only their errors.
struct RankZeroOutput {
  std::FILE *out = stdout;
  template <typename... Values> void print(fmt::format_string<Values...> format,
                                           Values &&...values) const {
    if (out)
      fmt::print(out, format, std::forward<Values>(values)...);
  }
};

void printSummary(const RankZeroOutput &out, const examples::TrainingRecipe &recipe,
                  const examples::RecipeTrainingReport &report) {
  if (report.epochs.empty()) {
    out.print("nothing to train: the checkpoint had completed {} epochs\n",
              report.resumedEpochs);
    return;
  }
  const examples::EpochReport &last = report.epochs.back();
  if (recipe.metric == examples::TrainingMetric::Accuracy)
    out.print("test accuracy: {:.2f}% on {} images after {} epochs ({:.0f} samples/s in the "
              "last epoch)\n",
              100 * last.testMetric, report.testExamples, last.epoch, last.samplesPerSecond);
  else
    out.print("validation loss: {:.3f} nats/word after {} epochs (uniform: {:.3f}; {:.0f} "
              "samples/s in the last epoch)\n",
              last.testMetric, last.epoch, std::log(1000.0), last.samplesPerSecond);
}

/// Data parallel under an MPI launcher: each rank on its local rank's GPU, set
/// before anything starts CUDA (or MPI, which may). Returns which, for errors
/// ("GPU 3 (local rank 1)"), or "" when no GPU was chosen.
Expected<std::string> selectRankGpu(const Args &args) {
  std::string target = args.value("--target").value_or("auto");
  if ((target != "cuda" && target != "auto") || !runtime::dist::launchedByMpi())
    return std::string();
  KILN_TRY(std::optional<int> localRank, localRankFromLauncher());
  if (!localRank)
    return std::string();
  KILN_TRY(std::string gpu, selectLocalRankGpu(*localRank));
  if (gpu.empty())
    return std::string();
  return fmt::format("GPU {} (local rank {}, as CUDA_VISIBLE_DEVICES={})", gpu, *localRank, gpu);
}

/// kiln train --nproc N: this command again, as N ranks under mpirun, once the
/// usage has been checked here (each rank checks it again, cheaply).
int launchRanks(const Args &args, const std::vector<std::string> &words, int64_t batch) {
  auto ranks = args.intValue("--nproc", 1, 1);
  if (!ranks)
    return usageError("train", ranks.error().message());
  if (batch < *ranks)
    return usageError("train", fmt::format("--batch {} is the global batch, shared by {} ranks: "
                                           "each needs at least one row",
                                           batch, *ranks));
  // The ranks would each start N more.
  if (runtime::dist::launchedByMpi())
    return usageError("train", "--nproc starts mpirun itself, but this process already runs "
                               "under an MPI launcher: drop --nproc or the launcher");
  auto status = runUnderMpirun(*ranks, "train", withoutNproc(words));
  if (!status)
    return reportError("train", status.error());
  return *status;
}

} // namespace

int trainCommand(const std::vector<std::string> &words) {
  std::set<std::string> valued = kTargetFlags;
  valued.insert({"--epochs",
                 "--batch",
                 "--optimizer",
                 "--lr",
                 "--momentum",
                 "--weight-decay",
                 "--label-smoothing",
                 "--accumulate",
                 "--clip-norm",
                 "--seed",
                 "--limit",
                 "--test-limit",
                 "--data",
                 "--checkpoint",
                 "--resume",
                 "--save-weights",
                 "--image-size",
                 "--width-divisor",
                 "--nproc",
                 "--bucket-mib",
                 "--first-bucket-mib",
                 "--last-batch"});
  auto args =
      parseCommandArgs("train", words, valued,
                       {"--help", "--nesterov", "--augment", "--quiet", "--allow-nonfinite"},
                       {"--profile"});
  if (!args)
    return kExitUsage;
  if (args->has("--help")) {
    fmt::print(kTrainHelp, examples::trainingRecipeListing(), kTargetHelp);
    return kExitOk;
  }
  if (args->positional().size() != 1)
    return usageErrorWithHelp(
        "train", fmt::format("expected one recipe, got {}", args->positional().size()));
  const examples::TrainingRecipe *recipe = examples::findTrainingRecipe(args->positional()[0]);
  if (!recipe) {
    fmt::print(stderr, "kiln train: unknown recipe '{}'; the recipes are:\n{}",
               args->positional()[0], examples::trainingRecipeListing());
    return kExitUsage;
  }
  auto options = parseTrainOptions(*args, *recipe);
  if (!options)
    return usageError("train", options.error().message());
  auto fault = trainFaultFromEnvironment();
  if (!fault)
    return usageError("train", fault.error().message());

  if (args->has("--nproc"))
    return launchRanks(*args, words, options->model.batch);

  auto gpu = selectRankGpu(*args);
  if (!gpu)
    return reportError("train", gpu.error());
  // A rank's errors say which GPU it was given.
  auto onRankGpu = [&](Error error) {
    if (!gpu->empty())
      error.withNote(fmt::format("this rank runs on {}", *gpu));
    return error;
  };
  auto opened = runtime::dist::openHostCommunicator();
  if (!opened)
    return reportError("train", opened.error());
  std::shared_ptr<runtime::dist::Communicator> ranks = std::move(*opened);
  // Errors name the rank that reports them; a single process stays "kiln train".
  std::string command = ranks->size() > 1
                            ? fmt::format("train [{}]", runtime::dist::describeRank(*ranks))
                            : "train";
  if (ranks->size() > 1) {
    if (options->model.batch < ranks->size())
      return usageError(command, fmt::format("--batch {} is the global batch, shared by {} "
                                             "ranks: each needs at least one row",
                                             options->model.batch, ranks->size()));
    // The host communicator, or NCCL over it when the program runs on the GPU.
    auto communicator = openRankCommunicator(ranks, options->training.compile);
    if (!communicator)
      return reportError(command, onRankGpu(communicator.error()));
    options->training.communicator = std::move(*communicator);
  }
  bool leader = ranks->rank() == 0;
  RankZeroOutput out{leader ? stdout : nullptr};
  options->progress = args->has("--quiet") || !leader ? nullptr : stderr;
  if (*fault)
    options->beforeStep = faultInjectionHook(**fault, ranks->rank());
  std::vector<runtime::RunProfile> profiles;
  if (args->has("--profile"))
    options->training.profiles = &profiles;

  // A resume is checked before anything compiles: a damaged checkpoint fails
  // (1), options it cannot continue with are bad usage (2). Every rank reads it.
  std::optional<examples::ResumePlan> resume;
  if (!options->resumePath.empty()) {
    auto checkpoint = training::readCheckpoint(options->resumePath);
    if (!checkpoint)
      return reportError(command, checkpoint.error());
    auto plan = examples::planResume(*recipe, *options, *checkpoint, options->resumePath);
    if (!plan)
      return usageError(command, plan.error().message());
    resume = std::move(*plan);
  }

  out.print("recipe:    {} — {}\n", recipe->name, recipe->description);
  out.print("training:  {} epochs, batch {}, {} lr {}{}, precision {}\n", options->epochs,
            options->model.batch, training::optimizerKindName(options->training.optimizer.kind),
            resume ? resume->learningRate : options->training.optimizer.learningRate,
            resume && !options->overrideLearningRate ? " (the checkpoint's)" : "",
            passes::precisionPolicyName(options->training.compile.precision));
  if (ranks->size() > 1) {
    const runtime::dist::Communicator &reducer = *options->training.communicator;
    out.print("ranks:     {} ({}{}), each training its shard of every batch of {}\n",
              ranks->size(), reducer.backendName(),
              &reducer == ranks.get() ? "" : fmt::format(" over {}", ranks->backendName()),
              options->model.batch);
  }
  if (resume) {
    out.print("resuming:  {} ({} epochs completed)\n", options->resumePath,
              resume->epochsCompleted);
    for (const std::string &note : resume->notes)
      out.print("note:      {}\n", note);
  }
  std::fflush(stdout);
  auto report = examples::trainRecipe(*recipe, *options);
  if (!report)
    return reportError(command, onRankGpu(report.error()));
  out.print("data:      {} ({} training, {} held-out examples, {} steps per epoch)\n",
            report->dataDescription, report->trainExamples, report->testExamples,
            report->stepsPerEpoch);
  out.print("target:    {} (compiled in {:.2f} s)\n", report->target, report->compileSeconds);
  if (report->resumedEpochs)
    out.print("resumed:   {} epochs from {}\n", report->resumedEpochs, options->resumePath);
  printSummary(out, *recipe, *report);
  if (args->has("--profile") && leader) {
    std::string path = args->value("--profile").value_or("");
    auto profile = trainingProfileReport(
        profiles, path.empty() ? std::nullopt : std::optional<std::string>(path));
    if (!profile)
      return reportError(command, profile.error());
    out.print("{}", *profile);
  }
  // Every rank holds the same parameters; rank 0 alone writes them.
  if (std::optional<std::string> path = args->value("--save-weights"); path && leader) {
    if (auto saved = io::saveSafetensors(*path, report->params); !saved)
      return reportError(command, saved.error());
    out.print("weights:   {}\n", *path);
  }
  return kExitOk;
}

} // namespace kiln::tool
