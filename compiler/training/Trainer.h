// Trainer: a compiled training program and the host state it updates —
// parameters, optimizer state, step count and loss scale — with checkpoints.
#pragma once

#include "compiler/training/LossScaler.h"
#include "compiler/training/TrainingProgram.h"
#include "runtime/CompiledModel.h"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::training {

/// What one training step did.
struct StepResult {
  /// The loss, averaged over the micro-batches.
  double loss = 0;
  /// The model's outputs (the loss included), one entry per micro-batch.
  std::vector<NamedTensors> outputs;
  /// True when the gradients were not all finite (loss scaling only): the
  /// parameters, optimizer state and step count did not change.
  bool skipped = false;
  /// The loss scale this step used (1 without loss scaling).
  double lossScale = 1;
  /// The global L2 norm of the gradients before clipping, when computed
  /// (clipping or loss scaling on).
  std::optional<double> gradNorm;
  /// Updates applied so far, this one included.
  int64_t stepCount = 0;
};

/// Trains a kiln::Graph. Construction compiles the program once (two
/// programs with gradient accumulation); steps only run it. Frozen parameters
/// are bound to the program once and never change.
class Trainer {
public:
  /// Builds and compiles the training program of `model`, starting from the
  /// model's current parameter values and zero optimizer state.
  static Expected<Trainer> create(const Graph &model, TrainingOptions options);

  /// One step on one batch (accumulationSteps must be 1).
  Expected<StepResult> step(const NamedTensors &batch);
  /// One step on accumulationSteps micro-batches of equal size.
  Expected<StepResult> step(std::span<const NamedTensors> microBatches);

  /// Every parameter's current value by name, frozen ones included.
  const NamedTensors &params() const { return params_; }
  /// The optimizer state by stateName(slot, param).
  const NamedTensors &optimizerState() const { return state_; }
  /// Updates applied so far (skipped steps do not count).
  int64_t stepCount() const { return stepCount_; }
  double lossScale() const { return scaler_.scale(); }
  /// The learning rate of the next step: an input of the program, so changing
  /// it (a schedule) never recompiles.
  double learningRate() const { return learningRate_; }
  /// Fails for a negative or non-finite rate, changing nothing.
  Expected<void> setLearningRate(double learningRate);

  const TrainingOptions &options() const { return options_; }
  const TrainingProgram &program() const { return program_; }

  /// Writes the trainable parameters, optimizer state, step count, learning
  /// rate and loss scale to a safetensors file (a temporary file renamed into
  /// place: an interrupted save leaves the previous checkpoint intact).
  Expected<void> saveCheckpoint(const std::string &path) const;
  /// Restores what saveCheckpoint wrote; every tensor must be present with the
  /// type this trainer expects. On error nothing changes.
  Expected<void> loadCheckpoint(const std::string &path);

private:
  Trainer(TrainingOptions options, TrainingProgram program, NamedTensors params);

  Expected<void> checkBatch(const NamedTensors &batch, size_t index) const;
  /// The optimizer scalars, trainable parameters, state and (for the one-graph
  /// program) the loss scale.
  NamedTensors updateInputs(bool withLossScale) const;
  /// Adopts the packed updates of `outputs`, unless a loss-scaled step was not finite.
  Expected<StepResult> finishStep(const NamedTensors &outputs, StepResult result);

  TrainingOptions options_;
  TrainingProgram program_;
  std::optional<CompiledModel> stepModel_;     ///< accumulationSteps == 1
  std::optional<CompiledModel> gradientModel_; ///< accumulationSteps > 1
  std::optional<CompiledModel> updateModel_;   ///< accumulationSteps > 1
  /// The model's inputs a batch must bind: names and types.
  std::vector<std::pair<std::string, ir::TensorType>> batchInputs_;
  NamedTensors params_;
  NamedTensors state_;
  int64_t stepCount_ = 0;
  double learningRate_ = 0;
  LossScaler scaler_;
};

} // namespace kiln::training
