// Validating a DataLoader's examples and options, and assembling batches.
#include "frontend/data/DataLoader.h"

#include "frontend/data/DataRandom.h"
#include "frontend/data/EpochOrder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>

namespace kiln::data {

struct DataLoader::State {
  NamedTensors examples;
  DataLoaderOptions options;
  int64_t numExamples = 0;
  int64_t numBatches = 0;
  /// Set when options.imageName names a tensor.
  ImageShape imageShape;
};

namespace {

std::unexpected<Error> invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, std::move(message));
}

std::string tensorNames(const NamedTensors &examples) {
  std::vector<std::string> names;
  for (const auto &[name, tensor] : examples)
    names.push_back(fmt::format("\"{}\"", name));
  return fmt::format("{}", fmt::join(names, ", "));
}

/// Checks the image tensor and the options that apply to it; returns its
/// per-sample shape.
Expected<ImageShape> checkImageOptions(const NamedTensors &examples,
                                       const DataLoaderOptions &options) {
  const std::string &name = options.imageName;
  auto found = examples.find(name);
  if (found == examples.end())
    return makeError(ErrorCode::NotFound,
                     fmt::format("data loader: imageName \"{}\" names no example tensor (they are "
                                 "{})",
                                 name, tensorNames(examples)));
  const HostTensor &images = found->second;
  if (images.dtype() != DType::F32 || images.rank() != 4)
    return invalid(fmt::format("data loader: image tensor \"{}\" is {}, augmentation and "
                               "normalization need f32 [N, C, H, W]",
                               name, images.typeStr()));
  ImageShape shape{images.shape()[1], images.shape()[2], images.shape()[3]};

  const AugmentationOptions &augmentation = options.augmentation;
  if (!(augmentation.flipProbability >= 0.0 && augmentation.flipProbability <= 1.0))
    return invalid(fmt::format("data loader: flip probability {} is outside [0, 1]",
                               augmentation.flipProbability));
  if (augmentation.cropPadding < 0 ||
      augmentation.cropPadding > std::max(shape.height, shape.width))
    return invalid(fmt::format("data loader: crop padding {} must lie in [0, {}] for {}x{} images",
                               augmentation.cropPadding, std::max(shape.height, shape.width),
                               shape.height, shape.width));

  const Normalization &normalization = options.normalization;
  auto channels = static_cast<size_t>(shape.channels);
  if (!normalization.mean.empty() || !normalization.stddev.empty()) {
    if (normalization.mean.size() != channels || normalization.stddev.size() != channels)
      return invalid(fmt::format("data loader: normalization has {} means and {} stddevs, image "
                                 "tensor \"{}\" ({}) has {} channels",
                                 normalization.mean.size(), normalization.stddev.size(), name,
                                 images.typeStr(), channels));
    for (size_t c = 0; c < channels; ++c)
      if (!std::isfinite(normalization.mean[c]) || !std::isfinite(normalization.stddev[c]) ||
          !(normalization.stddev[c] > 0.0))
        return invalid(fmt::format("data loader: channel {} normalizes with mean {} and stddev "
                                   "{}; expected a finite mean and a positive finite stddev",
                                   c, normalization.mean[c], normalization.stddev[c]));
  }
  return shape;
}

Expected<void> checkExamples(const NamedTensors &examples) {
  if (examples.empty())
    return invalid("data loader: no example tensors");
  const auto &[firstName, first] = *examples.begin();
  for (const auto &[name, tensor] : examples) {
    if (name.empty())
      return invalid("data loader: an example tensor has an empty name");
    if (tensor.rank() == 0)
      return invalid(fmt::format("data loader: example tensor \"{}\" is a scalar ({}); examples "
                                 "are indexed along the first axis",
                                 name, tensor.typeStr()));
    if (tensor.shape()[0] != first.shape()[0])
      return invalid(fmt::format("data loader: example tensors must share their first axis, but "
                                 "\"{}\" is {} and \"{}\" is {}",
                                 firstName, first.typeStr(), name, tensor.typeStr()));
  }
  if (first.shape()[0] == 0)
    return invalid(fmt::format("data loader: the example tensors hold no examples (\"{}\" is {})",
                               firstName, first.typeStr()));
  return {};
}

} // namespace

Expected<DataLoader> DataLoader::create(NamedTensors examples, DataLoaderOptions options) {
  KILN_TRY_VOID(checkExamples(examples));
  int64_t count = examples.begin()->second.shape()[0];
  if (options.batchSize < 1)
    return invalid(fmt::format("data loader: batch size {} must be at least 1", options.batchSize));
  if (options.shard.count < 1 || options.shard.rank < 0 ||
      options.shard.rank >= options.shard.count)
    return invalid(fmt::format("data loader: shard rank {} of {} ranks; expected a rank in [0, "
                               "count) and a count of at least 1",
                               options.shard.rank, options.shard.count));
  if (options.batchSize < options.shard.count)
    return invalid(fmt::format("data loader: batch size {} is smaller than the {} ranks that "
                               "share each batch: every rank needs at least one row",
                               options.batchSize, options.shard.count));
  if (options.dropLast && options.batchSize > count)
    return invalid(fmt::format("data loader: batch size {} exceeds the {} examples and dropLast "
                               "is set, so an epoch would have no batch",
                               options.batchSize, count));

  auto state = std::make_shared<State>();
  if (!options.imageName.empty()) {
    KILN_TRY(state->imageShape, checkImageOptions(examples, options));
  } else if (options.augmentation.any() || options.normalization.any() ||
             !options.normalization.stddev.empty()) {
    return invalid("data loader: augmentation or normalization is set but imageName is empty; "
                   "set it to the example tensor they apply to");
  }
  state->numExamples = count;
  state->numBatches = options.dropLast ? count / options.batchSize
                                       : (count + options.batchSize - 1) / options.batchSize;
  state->examples = std::move(examples);
  state->options = std::move(options);
  return DataLoader(std::move(state));
}

int64_t DataLoader::numExamples() const { return state_->numExamples; }
int64_t DataLoader::numBatches() const { return state_->numBatches; }
int64_t DataLoader::shardBatchSize() const {
  return shardRows(state_->options.batchSize, state_->options.shard).size();
}
const DataLoaderOptions &DataLoader::options() const { return state_->options; }

EpochBatches DataLoader::epoch(int64_t epoch) const {
  auto order = std::make_shared<const std::vector<int64_t>>(
      epochOrder(state_->numExamples, state_->options.seed, epoch, state_->options.shuffle));
  return EpochBatches(state_, epoch, std::move(order));
}

int64_t EpochBatches::size() const { return state_->numBatches; }

std::span<const int64_t> EpochBatches::batchExamples(int64_t index) const {
  if (index < 0 || index >= size())
    return {};
  int64_t begin = index * state_->options.batchSize;
  int64_t end = std::min(begin + state_->options.batchSize, state_->numExamples);
  // The last partial batch is split like a full one, over the rows it has.
  RowRange rows = shardRows(end - begin, state_->options.shard);
  return std::span<const int64_t>(*order_).subspan(static_cast<size_t>(begin + rows.begin),
                                                   static_cast<size_t>(rows.size()));
}

Expected<NamedTensors> EpochBatches::batch(int64_t index) const {
  if (index < 0 || index >= size())
    return invalid(fmt::format("data loader: batch {} of epoch {} does not exist (the epoch has "
                               "{} batches)",
                               index, epoch_, size()));
  std::span<const int64_t> members = batchExamples(index);
  auto rows = static_cast<int64_t>(members.size());
  NamedTensors batch;
  for (const auto &[name, examples] : state_->examples) {
    std::vector<int64_t> shape = examples.shape();
    shape[0] = rows;
    KILN_TRY(HostTensor tensor, HostTensor::create(examples.dtype(), std::move(shape)));
    size_t rowBytes = examples.byteSize() / static_cast<size_t>(state_->numExamples);
    for (int64_t row = 0; row < rows; ++row)
      std::memcpy(tensor.bytes().data() + static_cast<size_t>(row) * rowBytes,
                  examples.bytes().data() + static_cast<size_t>(members[row]) * rowBytes,
                  rowBytes);
    batch.emplace(name, std::move(tensor));
  }

  const DataLoaderOptions &options = state_->options;
  if (options.imageName.empty())
    return batch;
  ImageShape shape = state_->imageShape;
  auto sampleSize = static_cast<size_t>(shape.numElements());
  std::span<float> images = batch.at(options.imageName).as<float>();
  std::vector<float> scratch;
  for (int64_t row = 0; row < rows; ++row) {
    std::span<float> sample = images.subspan(static_cast<size_t>(row) * sampleSize, sampleSize);
    if (options.augmentation.any()) {
      // Seeded by the example, not its position: the same example gets the
      // same augmentation in an epoch whether or not the order is shuffled.
      Rng rng(deriveSeed(options.seed, SeedPurpose::Augment, static_cast<uint64_t>(epoch_),
                         static_cast<uint64_t>(members[row])));
      augmentSample(sample, shape, options.augmentation, rng, scratch);
    }
    if (options.normalization.any())
      normalizeSample(sample, shape, options.normalization);
  }
  return batch;
}

} // namespace kiln::data
