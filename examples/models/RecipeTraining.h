// Training a recipe end to end: data loaders, the compiled training program,
// epochs with progress, evaluation on the held-out split, checkpoints and
// resume. What `kiln train`, the main job and the training benchmark run.
#pragma once

#include "compiler/training/Trainer.h"
#include "examples/models/TrainingRecipes.h"

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::examples {

struct RecipeTrainingOptions {
  RecipeOptions model;           ///< batch, label smoothing, vgg sizes
  training::TrainingOptions training; ///< optimizer, precision, target, accumulation, clipping
  int64_t epochs = 1;
  uint64_t seed = 0;             ///< initial weights, shuffling and augmentation
  std::string dataDir;           ///< empty: the recipe's default
  /// The recipe's data already loaded (repeated runs in tests and benchmarks
  /// read the files once); null: loadData from dataDir.
  std::shared_ptr<const TrainingData> preloaded;
  data::AugmentationOptions augmentation; ///< on top of the recipe's loader
  /// Train on each epoch's last partial batch too (kiln train --last-batch train), with the
  /// program compiled once for a symbolic batch (docs/dynamic-shapes.md); false: it is dropped,
  /// so every step has the same batch. One process, no accumulation, and a recipe whose
  /// training program takes a symbolic batch.
  bool trainLastBatch = false;
  /// Use only the first N training (and test) examples; 0: all.
  int64_t trainLimit = 0;
  int64_t testLimit = 0;
  /// Written atomically after every epoch (and read by resume).
  std::string checkpointPath;
  /// Continue from this checkpoint: the epochs it completed are skipped, so
  /// the run ends as an uninterrupted one would, bit for bit. The options
  /// must keep what planResume refuses to change.
  std::string resumePath;
  /// Resuming: train at training.optimizer.learningRate instead of the
  /// checkpoint's learning rate (kiln train --lr with --resume).
  bool overrideLearningRate = false;
  /// Progress lines (one redrawn line per epoch); nullptr: silent.
  std::FILE *progress = stderr;
  /// Called before each training step with the step's index in the run
  /// (0-based, counting the epochs a resume skipped) and its micro-batches,
  /// which it may change; an error stops the run. kiln train's fault-injection
  /// hooks for the data-parallel tests use it (docs/distributed.md).
  std::function<Expected<void>(int64_t step, std::vector<NamedTensors> &microBatches)>
      beforeStep;
};

struct EpochReport {
  int64_t epoch = 0; ///< 1-based
  double trainLoss = 0;   ///< mean over the epoch's steps
  double trainMetric = 0; ///< accuracy (share) or loss, per the recipe's metric
  double testLoss = 0;
  double testMetric = 0;
  double samplesPerSecond = 0; ///< training steps only, data and compute
  double seconds = 0;
  int64_t skippedSteps = 0; ///< loss scaling: steps whose gradients were not finite
};

struct RecipeTrainingReport {
  std::string dataDescription;
  std::string target;       ///< where the program ran
  double compileSeconds = 0;
  int64_t trainExamples = 0, testExamples = 0, stepsPerEpoch = 0;
  int64_t resumedEpochs = 0; ///< epochs read from the resumed checkpoint
  std::vector<EpochReport> epochs;
  NamedTensors params; ///< every parameter after training, frozen ones included
};

/// What a checkpoint records about the run that wrote it ("run.<flag>" ->
/// the value, as kiln train's flags name them), so that a resume can tell
/// which options changed.
io::SafetensorsMetadata describeRun(const TrainingRecipe &recipe,
                                    const RecipeTrainingOptions &options);

/// How a run continues from a checkpoint.
struct ResumePlan {
  int64_t epochsCompleted = 0; ///< as the checkpoint recorded them
  double learningRate = 0;     ///< the checkpoint's, or the overriding one
  /// One line per option that differs from the checkpoint's run and is used.
  std::vector<std::string> notes;
};

/// Compares `options` with the run recorded in `checkpoint`. The seed, the
/// optimizer, the precision and the model (recipe, image size, width divisor)
/// must not change: InvalidArgument naming each that did. Anything else that
/// changed (batch, limit, learning rate, ...) is used, with a note.
Expected<ResumePlan> planResume(const TrainingRecipe &recipe,
                                const RecipeTrainingOptions &options,
                                const training::CheckpointState &checkpoint,
                                std::string_view where);

/// Trains `recipe`. Errors name what failed (data, compile, a step, a checkpoint).
/// With training.communicator, this process is one rank of data-parallel
/// training: options.model.batch is the global batch, of which the rank trains
/// and evaluates its shard (data::DataShard); the reported losses and metrics
/// are the global ones, summed over the ranks.
Expected<RecipeTrainingReport> trainRecipe(const TrainingRecipe &recipe,
                                           const RecipeTrainingOptions &options);

} // namespace kiln::examples
