// The trainable examples ("recipes"): each seed model with its loss, its data
// and the defaults that train it, so `kiln train`, the tests and the
// benchmarks train the same thing (docs/training.md, "Training the examples").
#pragma once

#include "compiler/training/Optimizer.h"
#include "frontend/Graph.h"
#include "frontend/data/DataLoader.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <functional>
#include <string>
#include <vector>

namespace kiln::examples {

/// What a recipe's data loader returns: examples named like the model's
/// inputs (and its label input), sharing their first axis.
struct TrainingData {
  NamedTensors train;
  NamedTensors test; ///< held-out examples the model is evaluated on
  std::string description; ///< e.g. "Fashion-MNIST from /usr/share/datasets/fashion-mnist"
};

/// How the model is judged on the held-out data.
enum class TrainingMetric {
  Accuracy,   ///< share of examples whose largest logit is the label
  NextWordLoss, ///< mean next-word cross entropy, against log(V) and the unigram entropy
};

struct RecipeOptions {
  int64_t batch = 64;
  /// Build the batch as the size symbol `batch in [1, batch]` (docs/dynamic-shapes.md), so one
  /// compile runs every batch up to `batch`.
  bool symbolicBatch = false;
  double labelSmoothing = 0.0;
  /// vgg-transfer: the input size (a multiple of 32) and the base's widths
  /// divided by this (1: VGG16's own 64..512), so tests can run it small.
  int64_t imageSize = 32;
  int64_t widthDivisor = 1;
};

struct TrainingRecipe {
  std::string name;        ///< "cnn", "mlp", "lstm", "vgg-transfer"
  std::string description; ///< one line
  int64_t defaultBatch = 64;
  int64_t defaultEpochs = 1;
  training::OptimizerOptions defaultOptimizer;
  TrainingMetric metric = TrainingMetric::Accuracy;
  /// The model input holding the labels (or next-word targets).
  std::string labelInput;
  /// Builds the model with its loss: the data's inputs, parameters, and the
  /// outputs "loss" (a scalar) and "logits".
  std::function<void(Graph &graph, const RecipeOptions &options)> build;
  /// Loads the train and test examples. `dataDir` empty: the default place.
  std::function<Expected<TrainingData>(const std::string &dataDir, const RecipeOptions &options)>
      loadData;
  /// Normalization and augmentation of the training batches (imageName empty:
  /// none); evaluation uses the same normalization and no augmentation.
  data::DataLoaderOptions loader;
};

/// Every recipe, in a stable order.
const std::vector<TrainingRecipe> &trainingRecipes();
/// The recipe called `name`, or nullptr.
const TrainingRecipe *findTrainingRecipe(std::string_view name);
/// "cnn, mlp, lstm, vgg-transfer" with one line each, for help texts.
std::string trainingRecipeListing();

} // namespace kiln::examples
