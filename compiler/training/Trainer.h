// Trainer: a compiled training program and the state it updates — parameters
// and optimizer state, kept by the compiled model where it runs (resident on a
// device), and the step count and loss scale on the host — with checkpoints.
#pragma once

#include "compiler/training/Checkpoint.h"
#include "compiler/training/DataParallel.h"
#include "compiler/training/LossScaler.h"
#include "compiler/training/TrainingProgram.h"
#include "frontend/data/DeviceBatchUploader.h"
#include "runtime/CompiledModel.h"

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::training {

/// What one training step did.
struct StepResult {
  /// The loss, averaged over the micro-batches (data parallel: over the
  /// global batch, the same on every rank).
  double loss = 0;
  /// The model's outputs (the loss included), one entry per micro-batch
  /// (data parallel: of this rank's shard).
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
/// programs with gradient accumulation); steps only run it. Parameters,
/// optimizer state and gradient sums are bound to the compiled programs once
/// and updated in place by each step (CompiledModel::runUpdating): on a device
/// they stay there, and a step moves only the batch in and the loss, the
/// model's outputs and the flags out. Frozen parameters never change.
///
/// Data parallel (options.communicator with several ranks: a host one for a
/// host program, a device one (NCCL) for a device program): every rank creates
/// a Trainer of the same model whose inputs have its
/// shard's rows, and steps on its shard of each global batch; the program sums
/// the weighted gradients across the ranks, so every rank applies the global
/// batch's update. Every rank must call create, step, saveCheckpoint,
/// loadCheckpoint and restore in the same order: each is collective.
class Trainer {
public:
  /// Builds and compiles the training program of `model`, starting from the
  /// model's current parameter values and zero optimizer state. Data
  /// parallel: the ranks agree on their shards, check that they built the
  /// same program (runtime::dist::verifySameProgram), and start from rank 0's
  /// parameters; a rank that fails makes create fail on every rank.
  static Expected<Trainer> create(const Graph &model, TrainingOptions options);

  /// One step on one batch (accumulationSteps must be 1).
  Expected<StepResult> step(const NamedTensors &batch);
  /// One step on accumulationSteps micro-batches of equal size.
  Expected<StepResult> step(std::span<const NamedTensors> microBatches);

  /// Starts copying `nextBatch` to the device, so that the copy overlaps the
  /// step the caller runs next (device programs; a host program reads batches
  /// in place and this only checks the batch). A later step given a batch
  /// with the same contents uses the copy; copies made ahead and then skipped
  /// are dropped. The uploader has two slots: one batch ahead of the step.
  Expected<void> prefetch(const NamedTensors &nextBatch);

  /// Every parameter's current value by name, frozen ones included (read
  /// back from the device for a device program).
  Expected<NamedTensors> params() const;
  /// The optimizer state by stateName(slot, param).
  Expected<NamedTensors> optimizerState() const;
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

  /// The trainable parameters, optimizer state, step count, learning rate
  /// and loss scale (read back from the device for a device program).
  Expected<CheckpointState> checkpointState() const;
  /// Writes checkpointState() and `run` (what the caller records about the
  /// run) to a sealed safetensors file (Checkpoint.h; a temporary file renamed
  /// into place: an interrupted save leaves the previous checkpoint intact).
  /// A state that is not finite is refused, and nothing is written. Data
  /// parallel: rank 0 writes (the state is the same on every rank), the others
  /// wait for it, and its failure is an error on every rank.
  Expected<void> saveCheckpoint(const std::string &path,
                                const io::SafetensorsMetadata &run = {}) const;
  /// Restores what saveCheckpoint wrote, after every check of
  /// decodeCheckpoint: the checksum, the values' ranges, and every tensor
  /// present with the type this trainer expects. On error nothing changes.
  /// Data parallel: every rank reads the file (any number of ranks, whatever
  /// number wrote it), and a rank that cannot makes it fail on every rank.
  Expected<void> loadCheckpoint(const std::string &path);
  /// Restores a decoded state, with the same checks (`where` names it in errors).
  Expected<void> restore(const CheckpointState &state, std::string_view where);
  /// The tensors a checkpoint of this trainer holds, with their types.
  const CheckpointLayout &checkpointLayout() const { return stateTypes_; }
  /// Data parallel: every rank's rows of the global batch (null: one process).
  const ShardPlan *shards() const { return shards_ ? &*shards_ : nullptr; }

private:
  Trainer(TrainingOptions options, TrainingProgram program);

  Expected<void> compilePrograms(const NamedTensors &initial);
  /// Data parallel: the shards, the program check and rank 0's parameters.
  Expected<void> joinRanks(NamedTensors &initial);
  /// Data parallel: the program's memory space is the communicator's.
  Expected<void> checkMemorySpace() const;
  /// Data parallel: where the trainer's own exchanges run (the communicator,
  /// or for a device one the host communicator it was opened over).
  runtime::dist::Communicator &hostCommunicator() const;
  /// `local` as every rank's outcome (one process: `local` itself).
  Expected<void> agreeAcrossRanks(const Expected<void> &local, std::string_view what) const;
  /// The checks of restore(), before anything changes.
  Expected<void> checkRestorable(const CheckpointState &state, std::string_view where) const;
  Expected<void> bindState(const CheckpointState &state);
  /// The run options of a program that reads the communicator.
  RunOptions runOptions() const;
  Expected<void> checkBatch(const NamedTensors &batch, size_t index) const;
  /// A symbolic batch: the micro-batches of one step have equal rows, and a data-parallel
  /// rank's rows are its shard's (the weights assume both).
  Expected<void> checkSymbolicRows(std::span<const NamedTensors> microBatches) const;
  /// The optimizer scalars and, for the one-graph program, the loss scale.
  NamedTensors updateInputs(bool withLossScale) const;
  /// Runs `model` (updating its state) on `batch` plus `tensors`: on a device
  /// the batch is read from the uploader's copy.
  Expected<NamedTensors> runOnBatch(CompiledModel &model, NamedTensors tensors,
                                    const NamedTensors &batch);
  Expected<data::DeviceBatch> uploadBatch(const CompiledModel &model, const NamedTensors &batch);
  Expected<data::DeviceBatch> deviceBatch(const CompiledModel &model, const NamedTensors &batch);
  /// Reads the flags of a finished update; a loss or gradient norm that is not
  /// finite in a step that was not skipped is an error naming the step
  /// (unless options.allowNonFinite).
  Expected<StepResult> finishStep(const NamedTensors &outputs, StepResult result);
  /// Data parallel: the global batch's loss from this shard's (collective).
  Expected<double> globalLoss(double shardLoss);
  /// The program that holds the trainable parameters and optimizer state,
  /// and the one that reads batches (and holds the frozen parameters).
  CompiledModel &stateModel() { return stepModel_ ? *stepModel_ : *updateModel_; }
  const CompiledModel &stateModel() const { return stepModel_ ? *stepModel_ : *updateModel_; }
  const CompiledModel &batchModel() const { return stepModel_ ? *stepModel_ : *gradientModel_; }

  TrainingOptions options_;
  TrainingProgram program_;
  std::optional<CompiledModel> stepModel_;     ///< accumulationSteps == 1
  std::optional<CompiledModel> gradientModel_; ///< accumulationSteps > 1
  std::optional<CompiledModel> updateModel_;   ///< accumulationSteps > 1
  /// The model's inputs a batch must bind: names and types.
  std::vector<std::pair<std::string, ir::TensorType>> batchInputs_;
  /// The trainable parameters' and the optimizer state's types (checkpoints).
  CheckpointLayout stateTypes_;
  std::vector<std::string> stateNames_; ///< stateName(slot, param), every pair
  NamedTensors zeroSums_;               ///< accumulation: each step starts from these
  int64_t stepCount_ = 0;
  double learningRate_ = 0;
  LossScaler scaler_;
  std::optional<ShardPlan> shards_; ///< data parallel only
  /// Device programs: the batch copies, and those made ahead by prefetch(),
  /// oldest first.
  std::unique_ptr<data::DeviceBatchUploader> uploader_;
  std::deque<data::DeviceBatch> prefetched_;
};

} // namespace kiln::training
