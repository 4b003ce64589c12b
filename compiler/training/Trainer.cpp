// Trainer: compiles the training program with its state bound, feeds it each
// step (batches through a copy stream on a device) and keeps the step count
// and loss scale.
#include "compiler/training/Trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kiln::training {

namespace {

Expected<CompiledModel> compileProgram(const ir::Graph &graph, const TrainingOptions &options,
                                       const NamedTensors &bound,
                                       std::vector<StateUpdate> updates) {
  KILN_TRY(CompiledModel model, compile(graph, options.compile));
  KILN_TRY_VOID(model.bindParams(bound));
  KILN_TRY_VOID(model.setStateUpdates(std::move(updates)));
  return model;
}

/// The model's own outputs: everything the program returns outside "train.".
NamedTensors modelOutputs(const NamedTensors &outputs) {
  NamedTensors result;
  for (const auto &[name, value] : outputs)
    if (!name.starts_with(kReservedPrefix))
      result.emplace(name, value);
  return result;
}

std::string typeOf(const HostTensor &tensor) { return tensor.typeStr(); }

template <typename T> Expected<void> outcomeOf(const Expected<T> &value) {
  if (value)
    return {};
  return std::unexpected(value.error());
}

} // namespace

Trainer::Trainer(TrainingOptions options, TrainingProgram program)
    : options_(std::move(options)), program_(std::move(program)),
      learningRate_(options_.optimizer.learningRate),
      scaler_(options_.lossScale, program_.lossScaling) {}

Expected<Trainer> Trainer::create(const Graph &model, TrainingOptions options) {
  bool dataParallel = options.dataParallel();
  if (dataParallel &&
      options.communicator->hostCommunicator().memorySpace() != runtime::dist::MemorySpace::Host)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("data-parallel training on {}: the communicator has no host "
                                 "communicator beside it for the trainer's own exchanges",
                                 runtime::dist::describeRank(*options.communicator)));
  Expected<TrainingProgram> program = buildTrainingProgram(model, options);
  if (dataParallel)
    KILN_TRY_VOID(agreeOnOutcome(options.communicator->hostCommunicator(), outcomeOf(program),
                                 "building the training program"));
  if (!program)
    return std::unexpected(program.error());
  Trainer trainer(std::move(options), std::move(*program));
  for (const ir::Value *input : model.ir().inputs())
    trainer.batchInputs_.emplace_back(input->name(), input->type());
  NamedTensors initial = model.paramValues();
  if (dataParallel)
    KILN_TRY_VOID(trainer.joinRanks(initial));
  Expected<void> compiled = trainer.compilePrograms(initial);
  if (compiled && dataParallel)
    compiled = trainer.checkMemorySpace();
  KILN_TRY_VOID(trainer.agreeAcrossRanks(compiled, "compiling the training program"));
  return trainer;
}

Expected<void> Trainer::checkMemorySpace() const {
  // The program's all_reduce steps call the communicator with its own buffers.
  bool onDevice = stateModel().device() != nullptr;
  const runtime::dist::Communicator &communicator = *options_.communicator;
  if ((communicator.memorySpace() == runtime::dist::MemorySpace::Device) == onDevice)
    return {};
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("data-parallel training: the program keeps its tensors on the "
                               "{}, but the communicator ({}) reduces {} buffers; {}",
                               onDevice ? "device" : "host",
                               runtime::dist::describeRank(communicator),
                               onDevice ? "host" : "device",
                               onDevice ? "open an NCCL communicator over the host one "
                                          "(openNcclCommunicator)"
                                        : "train a host program with the host communicator"));
}

runtime::dist::Communicator &Trainer::hostCommunicator() const {
  return options_.communicator->hostCommunicator();
}

Expected<void> Trainer::joinRanks(NamedTensors &initial) {
  runtime::dist::Communicator &communicator = hostCommunicator();
  Expected<int64_t> rows = batchRows(batchInputs_);
  KILN_TRY_VOID(agreeOnOutcome(communicator, outcomeOf(rows), "finding the batch's rows"));
  KILN_TRY(shards_, agreeOnShards(communicator, *rows));
  KILN_TRY_VOID(verifyTrainingProgram(communicator, *shards_, program_, options_));
  // The optimizer state starts at zero and the scalars come from the (same)
  // options: the parameters are all that can differ, frozen ones included.
  return broadcastFromRankZero(communicator, initial);
}

Expected<void> Trainer::agreeAcrossRanks(const Expected<void> &local,
                                         std::string_view what) const {
  if (!options_.dataParallel())
    return local;
  return agreeOnOutcome(hostCommunicator(), local, what);
}

RunOptions Trainer::runOptions() const {
  RunOptions options;
  options.communicator = options_.communicator.get();
  if (options_.profiles) // one run at a time: the pointer is used before the next
    options.profile = &options_.profiles->emplace_back();
  return options;
}

Expected<void> Trainer::compilePrograms(const NamedTensors &initial) {
  // What each program keeps bound, and which of its outputs update it.
  NamedTensors frozen, trainable, state;
  std::vector<StateUpdate> updates, sumUpdates;
  for (const std::string &name : program_.frozen)
    frozen.emplace(name, initial.at(name));
  for (const std::string &param : program_.trainable) {
    const HostTensor &value = initial.at(param);
    trainable.emplace(param, value);
    stateTypes_.emplace(param, ir::TensorType{value.dtype(), value.shape()});
    // The packed update [1 + slots, ...]: the parameter, then each slot.
    std::string packed = updateOutputName(param);
    auto bytes = static_cast<int64_t>(value.byteSize());
    updates.push_back({packed, 0, param});
    for (size_t slot = 0; slot < program_.stateSlots.size(); ++slot) {
      std::string name = stateName(program_.stateSlots[slot], param);
      state.emplace(name, HostTensor(value.dtype(), value.shape()));
      stateTypes_.emplace(name, ir::TensorType{value.dtype(), value.shape()});
      stateNames_.push_back(name);
      updates.push_back({packed, static_cast<int64_t>(slot + 1) * bytes, name});
    }
    zeroSums_.emplace(gradientSumName(param), HostTensor(value.dtype(), value.shape()));
    sumUpdates.push_back({gradientSumName(param), 0, gradientSumName(param)});
  }
  auto join = [](std::initializer_list<const NamedTensors *> parts) {
    NamedTensors all;
    for (const NamedTensors *part : parts)
      all.insert(part->begin(), part->end());
    return all;
  };
  if (program_.step) {
    KILN_TRY(stepModel_, compileProgram(*program_.step, options_,
                                        join({&frozen, &trainable, &state}), std::move(updates)));
    return {};
  }
  KILN_TRY(gradientModel_,
           compileProgram(*program_.gradient, options_, join({&frozen, &trainable, &zeroSums_}),
                          std::move(sumUpdates)));
  KILN_TRY(updateModel_, compileProgram(*program_.update, options_,
                                        join({&trainable, &state, &zeroSums_}),
                                        std::move(updates)));
  return {};
}

Expected<void> Trainer::checkBatch(const NamedTensors &batch, size_t index) const {
  std::string which = options_.accumulationSteps > 1 ? fmt::format(" {}", index) : "";
  std::vector<std::string> expected;
  for (const auto &[name, type] : batchInputs_) {
    expected.push_back(fmt::format("{} {}", name, type.str()));
    auto found = batch.find(name);
    if (found == batch.end())
      return makeError(ErrorCode::NotFound,
                       fmt::format("training step: batch{} lacks the input '{}' ({})", which,
                                   name, type.str()));
    const HostTensor &tensor = found->second;
    // A symbolic batch's sizes are checked against their ranges by the run, which names the
    // symbol and its range.
    bool shapeDiffers = type.isSymbolic() ? tensor.shape().size() != type.shape.size()
                                          : tensor.shape() != type.shape;
    if (tensor.dtype() != type.dtype || shapeDiffers)
      return makeError(tensor.dtype() != type.dtype ? ErrorCode::TypeMismatch
                                                    : ErrorCode::ShapeMismatch,
                       fmt::format("training step: batch{} input '{}' is {}, the model expects {}",
                                   which, name, typeOf(tensor), type.str()));
  }
  for (const auto &[name, tensor] : batch) {
    bool known = std::any_of(batchInputs_.begin(), batchInputs_.end(),
                             [&](const auto &input) { return input.first == name; });
    if (!known)
      return makeError(ErrorCode::NotFound,
                       fmt::format("training step: batch{} has '{}', which is not an input of "
                                   "the model (its inputs: {})",
                                   which, name, fmt::join(expected, ", ")));
  }
  return {};
}

Expected<void> Trainer::checkSymbolicRows(std::span<const NamedTensors> microBatches) const {
  // The rows of a batch whose leading size is symbolic: what each run may vary.
  auto rowsOf = [this](const NamedTensors &batch) -> std::optional<int64_t> {
    for (const auto &[name, type] : batchInputs_)
      if (type.isSymbolic() && !type.size(0).isConstant())
        return batch.at(name).shape()[0];
    return std::nullopt;
  };
  std::optional<int64_t> rows = rowsOf(microBatches[0]);
  if (!rows)
    return {};
  // Micro-batches are averaged as equals, and a rank's weight is its shard's fixed share:
  // a smaller batch there would be weighted as a full one.
  for (size_t i = 1; i < microBatches.size(); ++i)
    if (rowsOf(microBatches[i]) != rows)
      return makeError(ErrorCode::ShapeMismatch,
                       fmt::format("training step: micro-batch {} has {} rows, micro-batch 0 "
                                   "has {}: the micro-batches of a step must be equal",
                                   i, *rowsOf(microBatches[i]), *rows));
  if (shards_ && *rows != shards_->rows)
    return makeError(ErrorCode::ShapeMismatch,
                     fmt::format("training step: data parallel, this rank's batch has {} rows, "
                                 "but its shard of every global batch is {}",
                                 *rows, shards_->rows));
  return {};
}

NamedTensors Trainer::updateInputs(bool withLossScale) const {
  NamedTensors tensors = optimizerScalarValues(options_.optimizer, learningRate_, stepCount_ + 1,
                                               program_.paramDType);
  if (withLossScale && program_.lossScaling) {
    const ir::Value *scale = program_.step->findInput(kLossScaleInput);
    // The seed has the loss's type: [] or a one-element [1], [1, 1], ...
    tensors.emplace(kLossScaleInput,
                    HostTensor::fromDoubles(scale->type().dtype, scale->type().shape,
                                            std::vector<double>{scaler_.scale()}));
  }
  if (program_.dataParallel)
    tensors.emplace(kShardWeightInput,
                    HostTensor::fromDoubles(program_.paramDType, {},
                                            std::vector<double>{shards_->weight()}));
  return tensors;
}

Expected<NamedTensors> Trainer::params() const {
  KILN_TRY(NamedTensors values, stateModel().readParams(program_.trainable));
  KILN_TRY(NamedTensors frozen, batchModel().readParams(program_.frozen));
  values.merge(frozen);
  return values;
}

Expected<NamedTensors> Trainer::optimizerState() const {
  return stateModel().readParams(stateNames_);
}

Expected<void> Trainer::prefetch(const NamedTensors &nextBatch) {
  KILN_TRY_VOID(checkBatch(nextBatch, 0));
  if (!batchModel().device())
    return {};
  KILN_TRY(data::DeviceBatch uploaded, uploadBatch(batchModel(), nextBatch));
  prefetched_.push_back(std::move(uploaded));
  return {};
}

Expected<data::DeviceBatch> Trainer::uploadBatch(const CompiledModel &model,
                                                 const NamedTensors &batch) {
  if (!uploader_) {
    KILN_TRY(uploader_, data::DeviceBatchUploader::create(model.sharedDevice(), batch));
  }
  // Every slot taken by copies made ahead: the oldest goes.
  if (static_cast<int64_t>(prefetched_.size()) >= uploader_->numSlots()) {
    KILN_TRY_VOID(uploader_->discard(prefetched_.front()));
    prefetched_.pop_front();
  }
  return uploader_->upload(batch);
}

/// The copy of `batch` made ahead by prefetch(), or a new upload. Copies made
/// ahead of the one used were skipped by the caller: they are dropped.
Expected<data::DeviceBatch> Trainer::deviceBatch(const CompiledModel &model,
                                                 const NamedTensors &batch) {
  for (size_t i = 0; i < prefetched_.size(); ++i) {
    if (!uploader_->holdsSame(prefetched_[i], batch))
      continue;
    data::DeviceBatch found = prefetched_[i];
    for (size_t skipped = 0; skipped < i; ++skipped)
      KILN_TRY_VOID(uploader_->discard(prefetched_[skipped]));
    prefetched_.erase(prefetched_.begin(), prefetched_.begin() + static_cast<ptrdiff_t>(i + 1));
    return found;
  }
  return uploadBatch(model, batch);
}

Expected<NamedTensors> Trainer::runOnBatch(CompiledModel &model, NamedTensors tensors,
                                           const NamedTensors &batch) {
  if (!model.device()) {
    for (const auto &[name, value] : batch)
      tensors.emplace(name, value);
    return model.runUpdating(tensors, runOptions());
  }
  KILN_TRY(data::DeviceBatch uploaded, deviceBatch(model, batch));
  DeviceInputs inputs;
  inputs.addresses = uploaded.buffers;
  inputs.beforeKernels = [&](runtime::Stream stream) {
    return uploader_->waitUntilUploaded(uploaded, stream);
  };
  inputs.afterKernels = [&](runtime::Stream stream) {
    return uploader_->release(uploaded, stream);
  };
  RunOptions options = runOptions();
  options.deviceInputs = &inputs;
  options.launchGraph = true;
  Expected<NamedTensors> outputs = model.runUpdating(tensors, options);
  // A run that failed before its kernels never released the slot.
  KILN_TRY_VOID(uploader_->discard(uploaded));
  return outputs;
}

Expected<void> Trainer::setLearningRate(double learningRate) {
  if (!(std::isfinite(learningRate) && learningRate >= 0))
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("training: the learning rate must be finite and >= 0, got {}",
                                 learningRate));
  learningRate_ = learningRate;
  return {};
}

Expected<StepResult> Trainer::step(const NamedTensors &batch) {
  return step(std::span<const NamedTensors>(&batch, 1));
}

Expected<StepResult> Trainer::step(std::span<const NamedTensors> microBatches) {
  int64_t k = options_.accumulationSteps;
  if (static_cast<int64_t>(microBatches.size()) != k)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("training step: got {} batches, but accumulationSteps is {}",
                                 microBatches.size(), k));
  for (size_t i = 0; i < microBatches.size(); ++i)
    KILN_TRY_VOID(checkBatch(microBatches[i], i));
  KILN_TRY_VOID(checkSymbolicRows(microBatches));

  StepResult result;
  result.lossScale = scaler_.scale();
  if (stepModel_) {
    KILN_TRY(NamedTensors outputs, runOnBatch(*stepModel_, updateInputs(true), microBatches[0]));
    result.loss = outputs.at(options_.lossOutput).getDouble(0);
    result.outputs.push_back(modelOutputs(outputs));
    KILN_TRY(result.loss, globalLoss(result.loss));
    return finishStep(outputs, std::move(result));
  }

  // Accumulation: k runs of the gradient program add to its bound gradient
  // sums (zeroed first); the update program takes them over and applies
  // their mean; the gradient program takes the new parameters.
  KILN_TRY_VOID(gradientModel_->bindParams(zeroSums_));
  NamedTensors scale;
  if (program_.lossScaling) {
    const ir::TensorType &type = program_.gradient->findInput(kLossScaleInput)->type();
    scale.emplace(kLossScaleInput, HostTensor::fromDoubles(type.dtype, type.shape,
                                                           std::vector<double>{scaler_.scale()}));
  }
  double lossSum = 0;
  for (const NamedTensors &batch : microBatches) {
    KILN_TRY(NamedTensors outputs, runOnBatch(*gradientModel_, scale, batch));
    lossSum += outputs.at(options_.lossOutput).getDouble(0);
    result.outputs.push_back(modelOutputs(outputs));
  }
  result.loss = lossSum / static_cast<double>(k);
  std::vector<std::string> sums;
  for (const auto &[name, zero] : zeroSums_)
    sums.push_back(name);
  KILN_TRY_VOID(updateModel_->copyParamsFrom(*gradientModel_, sums));
  KILN_TRY(NamedTensors outputs, updateModel_->runUpdating(updateInputs(false), runOptions()));
  KILN_TRY_VOID(gradientModel_->copyParamsFrom(*updateModel_, program_.trainable));
  KILN_TRY(result.loss, globalLoss(result.loss));
  return finishStep(outputs, std::move(result));
}

Expected<double> Trainer::globalLoss(double shardLoss) {
  if (!program_.dataParallel)
    return shardLoss;
  // Each rank's loss is its shard's mean: weighted like the gradients, the
  // sum is the global batch's mean, so every rank reports (and checks for
  // divergence) the same loss.
  return sumAcrossRanks(hostCommunicator(), shardLoss * shards_->weight());
}

Expected<StepResult> Trainer::finishStep(const NamedTensors &outputs, StepResult result) {
  if (auto norm = outputs.find(kGradNormOutput); norm != outputs.end())
    result.gradNorm = norm->second.getDouble(0);
  bool finite = true;
  if (auto flag = outputs.find(kGradsFiniteOutput); flag != outputs.end())
    finite = flag->second.getDouble(0) != 0;
  // The program itself kept the old values when a gradient was not finite.
  if (finite)
    ++stepCount_;
  result.skipped = !finite;
  scaler_.update(finite);
  result.stepCount = stepCount_;
  // A skipped step (loss scaling) changed nothing; any other step with a
  // non-finite loss or gradient norm has made the parameters non-finite.
  bool diverged =
      !std::isfinite(result.loss) || (result.gradNorm && !std::isfinite(*result.gradNorm));
  if (finite && diverged && !options_.allowNonFinite)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("training step {}: the {} is {}: training diverged (a learning "
                                 "rate too large?); the parameters are no longer finite",
                                 stepCount_, std::isfinite(result.loss) ? "gradient norm" : "loss",
                                 std::isfinite(result.loss) ? *result.gradNorm : result.loss));
  return result;
}

Expected<CheckpointState> Trainer::checkpointState() const {
  CheckpointState state;
  KILN_TRY(state.tensors, stateModel().readParams(program_.trainable));
  KILN_TRY(NamedTensors optimizerValues, optimizerState());
  state.tensors.merge(optimizerValues);
  state.stepCount = stepCount_;
  state.learningRate = learningRate_;
  state.lossScale = scaler_.scale();
  state.goodSteps = scaler_.goodSteps();
  return state;
}

Expected<void> Trainer::saveCheckpoint(const std::string &path,
                                       const io::SafetensorsMetadata &run) const {
  auto write = [&]() -> Expected<void> {
    KILN_TRY(CheckpointState state, checkpointState());
    state.run = run;
    return writeCheckpoint(path, state);
  };
  if (!options_.dataParallel())
    return write();
  // Every rank holds the same state: rank 0 writes it, the others wait here.
  Expected<void> written = hostCommunicator().rank() == 0 ? write() : Expected<void>{};
  return agreeAcrossRanks(written, fmt::format("writing checkpoint {}", path));
}

Expected<void> Trainer::loadCheckpoint(const std::string &path) {
  Expected<CheckpointState> state = readCheckpoint(path, &stateTypes_);
  Expected<void> usable = state ? checkRestorable(*state, path) : outcomeOf(state);
  KILN_TRY_VOID(agreeAcrossRanks(usable, fmt::format("loading checkpoint {}", path)));
  return bindState(*state);
}

Expected<void> Trainer::restore(const CheckpointState &state, std::string_view where) {
  KILN_TRY_VOID(agreeAcrossRanks(checkRestorable(state, where),
                                 fmt::format("restoring the state of {}", where)));
  return bindState(state);
}

Expected<void> Trainer::checkRestorable(const CheckpointState &state,
                                        std::string_view where) const {
  KILN_TRY_VOID(checkCheckpointValues(state, where));
  return checkCheckpointLayout(state, stateTypes_, where);
}

Expected<void> Trainer::bindState(const CheckpointState &state) {
  KILN_TRY_VOID(stateModel().bindParams(state.tensors));
  if (gradientModel_) {
    NamedTensors trainable;
    for (const std::string &name : program_.trainable)
      trainable.emplace(name, state.tensors.at(name));
    KILN_TRY_VOID(gradientModel_->bindParams(trainable));
  }
  stepCount_ = state.stepCount;
  learningRate_ = state.learningRate;
  scaler_.restore(state.lossScale, state.goodSteps);
  return {};
}

} // namespace kiln::training
