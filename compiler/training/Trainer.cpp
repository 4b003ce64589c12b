// Trainer: compiles the training program, feeds it each step and keeps the
// parameters, optimizer state, step count and loss scale on the host.
#include "compiler/training/Trainer.h"

#include "frontend/io/Safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kiln::training {

namespace {

/// Checkpoint entries besides the parameters and the state (all "train.",
/// which no model name may use).
constexpr std::string_view kStepCountEntry = "train.step_count";
constexpr std::string_view kLearningRateEntry = "train.learning_rate";
constexpr std::string_view kLossScaleEntry = "train.loss_scale";
constexpr std::string_view kGoodStepsEntry = "train.good_steps";

HostTensor scalarTensor(DType dtype, double value) {
  return HostTensor::fromDoubles(dtype, {}, std::span<const double>(&value, 1));
}

Expected<CompiledModel> compileProgram(const ir::Graph &graph, const TrainingOptions &options,
                                       const NamedTensors &frozen) {
  KILN_TRY(CompiledModel model, compile(graph, options.compile));
  if (!frozen.empty())
    KILN_TRY_VOID(model.bindParams(frozen));
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

} // namespace

Trainer::Trainer(TrainingOptions options, TrainingProgram program, NamedTensors params)
    : options_(std::move(options)), program_(std::move(program)), params_(std::move(params)),
      learningRate_(options_.optimizer.learningRate),
      scaler_(options_.lossScale, program_.lossScaling) {}

Expected<Trainer> Trainer::create(const Graph &model, TrainingOptions options) {
  KILN_TRY(TrainingProgram program, buildTrainingProgram(model, options));
  Trainer trainer(std::move(options), std::move(program), model.paramValues());
  for (const ir::Value *input : model.ir().inputs())
    trainer.batchInputs_.emplace_back(input->name(), input->type());
  for (const std::string &param : trainer.program_.trainable) {
    const HostTensor &value = trainer.params_.at(param);
    for (const std::string &slot : trainer.program_.stateSlots)
      trainer.state_.emplace(stateName(slot, param), HostTensor(value.dtype(), value.shape()));
  }
  NamedTensors frozen;
  for (const std::string &name : trainer.program_.frozen)
    frozen.emplace(name, trainer.params_.at(name));
  const TrainingOptions &opts = trainer.options_;
  if (trainer.program_.step) {
    KILN_TRY(trainer.stepModel_, compileProgram(*trainer.program_.step, opts, frozen));
  } else {
    KILN_TRY(trainer.gradientModel_, compileProgram(*trainer.program_.gradient, opts, frozen));
    KILN_TRY(trainer.updateModel_, compileProgram(*trainer.program_.update, opts, {}));
  }
  return trainer;
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
    if (tensor.dtype() != type.dtype || tensor.shape() != type.shape)
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

NamedTensors Trainer::updateInputs(bool withLossScale) const {
  NamedTensors tensors = optimizerScalarValues(options_.optimizer, learningRate_, stepCount_ + 1,
                                               program_.paramDType);
  for (const std::string &name : program_.trainable)
    tensors.emplace(name, params_.at(name));
  for (const auto &[name, value] : state_)
    tensors.emplace(name, value);
  if (withLossScale && program_.lossScaling) {
    const ir::Value *scale = program_.step->findInput(kLossScaleInput);
    // The seed has the loss's type: [] or a one-element [1], [1, 1], ...
    tensors.emplace(kLossScaleInput,
                    HostTensor::fromDoubles(scale->type().dtype, scale->type().shape,
                                            std::vector<double>{scaler_.scale()}));
  }
  return tensors;
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

  StepResult result;
  result.lossScale = scaler_.scale();
  if (stepModel_) {
    NamedTensors tensors = updateInputs(true);
    for (const auto &[name, value] : microBatches[0])
      tensors.emplace(name, value);
    KILN_TRY(NamedTensors outputs, stepModel_->run(tensors));
    result.loss = outputs.at(options_.lossOutput).getDouble(0);
    result.outputs.push_back(modelOutputs(outputs));
    return finishStep(outputs, std::move(result));
  }

  // Accumulation: k runs of the gradient program carry the gradient sums
  // from one to the next; one run of the update program applies their mean.
  NamedTensors sums;
  for (const std::string &name : program_.trainable) {
    const HostTensor &param = params_.at(name);
    sums.emplace(gradientSumName(name), HostTensor(param.dtype(), param.shape()));
  }
  std::optional<HostTensor> scale;
  if (program_.lossScaling) {
    const ir::TensorType &type = program_.gradient->findInput(kLossScaleInput)->type();
    scale = HostTensor::fromDoubles(type.dtype, type.shape, std::vector<double>{scaler_.scale()});
  }
  double lossSum = 0;
  for (const NamedTensors &batch : microBatches) {
    NamedTensors tensors = batch;
    for (const std::string &name : program_.trainable)
      tensors.emplace(name, params_.at(name));
    for (auto &[name, value] : sums)
      tensors.emplace(name, std::move(value));
    if (scale)
      tensors.emplace(kLossScaleInput, *scale);
    KILN_TRY(NamedTensors outputs, gradientModel_->run(tensors));
    for (auto &[name, value] : sums)
      value = std::move(outputs.at(name));
    lossSum += outputs.at(options_.lossOutput).getDouble(0);
    result.outputs.push_back(modelOutputs(outputs));
  }
  result.loss = lossSum / static_cast<double>(k);
  NamedTensors tensors = updateInputs(false);
  for (auto &[name, value] : sums)
    tensors.emplace(name, std::move(value));
  KILN_TRY(NamedTensors outputs, updateModel_->run(tensors));
  return finishStep(outputs, std::move(result));
}

Expected<StepResult> Trainer::finishStep(const NamedTensors &outputs, StepResult result) {
  if (auto norm = outputs.find(kGradNormOutput); norm != outputs.end())
    result.gradNorm = norm->second.getDouble(0);
  bool finite = true;
  if (auto flag = outputs.find(kGradsFiniteOutput); flag != outputs.end())
    finite = flag->second.getDouble(0) != 0;
  if (finite) {
    // Unpack [1 + slots, ...]: the new parameter, then each new state slot.
    for (const std::string &param : program_.trainable) {
      const HostTensor &packed = outputs.at(updateOutputName(param));
      std::vector<HostTensor *> parts = {&params_.at(param)};
      for (const std::string &slot : program_.stateSlots)
        parts.push_back(&state_.at(stateName(slot, param)));
      KILN_CHECK(packed.byteSize() == parts.size() * parts[0]->byteSize(),
                 "a packed update holds the parameter and each state slot");
      for (size_t i = 0; i < parts.size(); ++i)
        std::memcpy(parts[i]->bytes().data(), packed.bytes().data() + i * parts[i]->byteSize(),
                    parts[i]->byteSize());
    }
    ++stepCount_;
  }
  result.skipped = !finite;
  scaler_.update(finite);
  result.stepCount = stepCount_;
  return result;
}

Expected<void> Trainer::saveCheckpoint(const std::string &path) const {
  io::TensorMap tensors;
  for (const std::string &name : program_.trainable)
    tensors.emplace(name, params_.at(name));
  for (const auto &[name, value] : state_)
    tensors.emplace(name, value);
  tensors.emplace(kStepCountEntry, scalarTensor(DType::I64, static_cast<double>(stepCount_)));
  tensors.emplace(kLearningRateEntry, scalarTensor(DType::F64, learningRate_));
  tensors.emplace(kLossScaleEntry, scalarTensor(DType::F64, scaler_.scale()));
  tensors.emplace(kGoodStepsEntry,
                  scalarTensor(DType::I64, static_cast<double>(scaler_.goodSteps())));
  return io::saveSafetensors(path, tensors);
}

Expected<void> Trainer::loadCheckpoint(const std::string &path) {
  KILN_TRY(io::TensorMap tensors, io::loadSafetensors(path));
  // What this trainer expects, with the type each entry must have.
  std::map<std::string, std::pair<DType, std::vector<int64_t>>, std::less<>> expected;
  for (const std::string &name : program_.trainable)
    expected[name] = {params_.at(name).dtype(), params_.at(name).shape()};
  for (const auto &[name, value] : state_)
    expected[name] = {value.dtype(), value.shape()};
  expected[std::string(kStepCountEntry)] = {DType::I64, {}};
  expected[std::string(kLearningRateEntry)] = {DType::F64, {}};
  expected[std::string(kLossScaleEntry)] = {DType::F64, {}};
  expected[std::string(kGoodStepsEntry)] = {DType::I64, {}};
  for (const auto &[name, type] : expected) {
    auto found = tensors.find(name);
    if (found == tensors.end())
      return makeError(ErrorCode::FormatError,
                       fmt::format("checkpoint {}: lacks '{}' (a checkpoint of another model "
                                   "or optimizer?)",
                                   path, name));
    if (found->second.dtype() != type.first || found->second.shape() != type.second)
      return makeError(ErrorCode::FormatError,
                       fmt::format("checkpoint {}: '{}' is {}, this trainer expects {}", path,
                                   name, found->second.typeStr(),
                                   ir::TensorType{type.first, type.second}.str()));
  }
  for (const auto &[name, value] : tensors)
    if (!expected.contains(name))
      return makeError(ErrorCode::FormatError,
                       fmt::format("checkpoint {}: has '{}', which this trainer does not know "
                                   "(a checkpoint of another model or optimizer?)",
                                   path, name));

  for (const std::string &name : program_.trainable)
    params_.at(name) = std::move(tensors.at(name));
  for (auto &[name, value] : state_)
    value = std::move(tensors.at(name));
  auto scalar = [&](std::string_view name) { return tensors.find(name)->second.getDouble(0); };
  stepCount_ = static_cast<int64_t>(scalar(kStepCountEntry));
  learningRate_ = scalar(kLearningRateEntry);
  scaler_.restore(scalar(kLossScaleEntry), static_cast<int64_t>(scalar(kGoodStepsEntry)));
  return {};
}

} // namespace kiln::training
