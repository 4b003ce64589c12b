// Checkpoint encoding, sealing and checks (Checkpoint.h).
#include "compiler/training/Checkpoint.h"

#include "runtime/cache/ContentHash.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace kiln::training {

namespace {

/// The scalars' entries (all "train.", which no model name may use).
constexpr std::string_view kStepCountEntry = "train.step_count";
constexpr std::string_view kLearningRateEntry = "train.learning_rate";
constexpr std::string_view kLossScaleEntry = "train.loss_scale";
constexpr std::string_view kGoodStepsEntry = "train.good_steps";

std::unexpected<Error> checkpointError(std::string_view where, const std::string &what) {
  return makeError(ErrorCode::FormatError, fmt::format("checkpoint {}: {}", where, what));
}

HostTensor scalarTensor(DType dtype, double value) {
  return HostTensor::fromDoubles(dtype, {}, std::span<const double>(&value, 1));
}

HostTensor int64Tensor(int64_t value) {
  HostTensor tensor(DType::I64, {});
  std::memcpy(tensor.bytes().data(), &value, sizeof(value));
  return tensor;
}

/// A scalar entry of the expected dtype, or an error naming it.
Expected<const HostTensor *> scalarEntry(const NamedTensors &tensors, std::string_view name,
                                         DType dtype, std::string_view where) {
  auto found = tensors.find(name);
  if (found == tensors.end())
    return checkpointError(where, fmt::format("lacks '{}' (a checkpoint of kiln's Trainer holds "
                                              "it)",
                                              name));
  if (found->second.dtype() != dtype || !found->second.shape().empty())
    return checkpointError(where, fmt::format("'{}' is {}, expected {}[]", name,
                                              found->second.typeStr(), dtypeName(dtype)));
  return &found->second;
}

} // namespace

std::string checkpointChecksum(const io::SafetensorsContents &contents) {
  // Lengths before each field keep the text unambiguous; each tensor's bytes
  // are hashed on their own, so no copy of the data is made.
  std::string text = "kiln checkpoint checksum\n";
  for (const auto &[key, value] : contents.metadata)
    if (key != kCheckpointChecksumKey)
      text += fmt::format("meta {} {} {} {}\n", key.size(), key, value.size(), value);
  for (const auto &[name, tensor] : contents.tensors) {
    std::string_view bytes(reinterpret_cast<const char *>(tensor.bytes().data()),
                           tensor.byteSize());
    text += fmt::format("tensor {} {} {} {}\n", name.size(), name, tensor.typeStr(),
                        runtime::hashBytes(bytes).hex());
  }
  return runtime::hashBytes(text).hex();
}

std::optional<std::string> findNonFinite(const NamedTensors &tensors) {
  for (const auto &[name, tensor] : tensors) {
    if (!isFloatingPoint(tensor.dtype()))
      continue;
    for (int64_t i = 0; i < tensor.numElements(); ++i) {
      double value = tensor.getDouble(i);
      if (!std::isfinite(value))
        return fmt::format("'{}' holds {} at element {}", name, value, i);
    }
  }
  return std::nullopt;
}

Expected<void> checkCheckpointValues(const CheckpointState &state, std::string_view where) {
  if (state.stepCount < 0)
    return checkpointError(where, fmt::format("step count {} is negative", state.stepCount));
  if (!(std::isfinite(state.learningRate) && state.learningRate > 0))
    return checkpointError(where, fmt::format("learning rate {} is not a finite number > 0",
                                              state.learningRate));
  if (!(std::isfinite(state.lossScale) && state.lossScale > 0))
    return checkpointError(where, fmt::format("loss scale {} is not a finite number > 0",
                                              state.lossScale));
  if (state.goodSteps < 0)
    return checkpointError(where, fmt::format("good step count {} is negative", state.goodSteps));
  if (std::optional<std::string> bad = findNonFinite(state.tensors))
    return checkpointError(where, fmt::format("{}: parameters and optimizer state must be "
                                              "finite",
                                              *bad));
  for (const auto &[key, value] : state.run)
    if (key.starts_with("kiln."))
      return checkpointError(where, fmt::format("run entry '{}' uses the prefix 'kiln.', which "
                                                "kiln keeps for itself",
                                                key));
  return {};
}

Expected<void> checkCheckpointLayout(const CheckpointState &state, const CheckpointLayout &layout,
                                     std::string_view where) {
  std::vector<std::string> problems, missing, unknown;
  for (const auto &[name, type] : layout) {
    auto found = state.tensors.find(name);
    if (found == state.tensors.end())
      missing.push_back(fmt::format("'{}'", name));
    else if (found->second.dtype() != type.dtype || found->second.shape() != type.shape)
      problems.push_back(fmt::format("'{}' is {}, this trainer expects {}", name,
                                     found->second.typeStr(), type.str()));
  }
  for (const auto &[name, tensor] : state.tensors)
    if (!layout.contains(name))
      unknown.push_back(fmt::format("'{}'", name));
  if (!missing.empty())
    problems.insert(problems.begin(), fmt::format("lacks {}", fmt::join(missing, ", ")));
  if (!unknown.empty())
    problems.push_back(fmt::format("has {}, which this trainer does not know",
                                   fmt::join(unknown, ", ")));
  if (problems.empty())
    return {};
  return checkpointError(where, fmt::format("{} (a checkpoint of another model or optimizer?)",
                                            fmt::join(problems, "; ")));
}

io::SafetensorsContents encodeCheckpoint(const CheckpointState &state) {
  io::SafetensorsContents contents;
  contents.tensors = state.tensors;
  contents.tensors.insert_or_assign(std::string(kStepCountEntry), int64Tensor(state.stepCount));
  contents.tensors.insert_or_assign(std::string(kLearningRateEntry),
                                    scalarTensor(DType::F64, state.learningRate));
  contents.tensors.insert_or_assign(std::string(kLossScaleEntry),
                                    scalarTensor(DType::F64, state.lossScale));
  contents.tensors.insert_or_assign(std::string(kGoodStepsEntry), int64Tensor(state.goodSteps));
  contents.metadata = state.run;
  contents.metadata.insert_or_assign(std::string(kCheckpointFormatKey),
                                     std::string(kCheckpointFormat));
  contents.metadata.insert_or_assign(std::string(kCheckpointChecksumKey),
                                     checkpointChecksum(contents));
  return contents;
}

Expected<CheckpointState> decodeCheckpoint(const io::SafetensorsContents &contents,
                                           std::string_view where,
                                           const CheckpointLayout *layout) {
  auto format = contents.metadata.find(kCheckpointFormatKey);
  auto checksum = contents.metadata.find(kCheckpointChecksumKey);
  if (format == contents.metadata.end() || checksum == contents.metadata.end())
    return checkpointError(where,
                           fmt::format("has no \"{}\" and \"{}\" in its __metadata__, so it "
                                       "cannot be verified: written by another tool, or by a "
                                       "kiln from before checkpoints were sealed (such files "
                                       "are refused; train again from the start)",
                                       kCheckpointFormatKey, kCheckpointChecksumKey));
  if (format->second != kCheckpointFormat)
    return checkpointError(where, fmt::format("format is \"{}\", this kiln reads \"{}\"",
                                              format->second, kCheckpointFormat));
  std::string computed = checkpointChecksum(contents);
  if (checksum->second != computed)
    return checkpointError(where, fmt::format("checksum mismatch (stored {}, contents hash to "
                                              "{}): the file was changed or damaged after it "
                                              "was written",
                                              checksum->second, computed));

  CheckpointState state;
  KILN_TRY(const HostTensor *steps,
           scalarEntry(contents.tensors, kStepCountEntry, DType::I64, where));
  KILN_TRY(const HostTensor *rate,
           scalarEntry(contents.tensors, kLearningRateEntry, DType::F64, where));
  KILN_TRY(const HostTensor *scale,
           scalarEntry(contents.tensors, kLossScaleEntry, DType::F64, where));
  KILN_TRY(const HostTensor *good,
           scalarEntry(contents.tensors, kGoodStepsEntry, DType::I64, where));
  // Integers are read as stored: a double would round, and casting one back overflows.
  std::memcpy(&state.stepCount, steps->bytes().data(), sizeof(int64_t));
  std::memcpy(&state.goodSteps, good->bytes().data(), sizeof(int64_t));
  state.learningRate = rate->getDouble(0);
  state.lossScale = scale->getDouble(0);
  for (const auto &[name, tensor] : contents.tensors)
    if (name != kStepCountEntry && name != kLearningRateEntry && name != kLossScaleEntry &&
        name != kGoodStepsEntry)
      state.tensors.emplace(name, tensor);
  for (const auto &[key, value] : contents.metadata)
    if (key != kCheckpointFormatKey && key != kCheckpointChecksumKey)
      state.run.emplace(key, value);
  KILN_TRY_VOID(checkCheckpointValues(state, where));
  if (layout)
    KILN_TRY_VOID(checkCheckpointLayout(state, *layout, where));
  return state;
}

Expected<void> writeCheckpoint(const std::string &path, const CheckpointState &state) {
  KILN_TRY_VOID(checkCheckpointValues(state, path));
  io::SafetensorsContents contents = encodeCheckpoint(state);
  return io::saveSafetensors(path, contents.tensors, contents.metadata);
}

Expected<CheckpointState> readCheckpoint(const std::string &path,
                                         const CheckpointLayout *layout) {
  Expected<io::SafetensorsContents> contents = io::readSafetensors(path);
  if (!contents)
    return std::unexpected(contents.error());
  return decodeCheckpoint(*contents, path, layout);
}

} // namespace kiln::training
