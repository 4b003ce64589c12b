// DataLoader: in-memory examples (named tensors sharing their first axis)
// served as batches, in a seeded order per epoch, with per-sample image
// augmentation and normalization. Batches are NamedTensors, ready for
// CompiledModel::run.
#pragma once

#include "frontend/data/DataShard.h"
#include "frontend/data/ImageAugmentation.h"
#include "frontend/data/Normalization.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kiln::data {

struct DataLoaderOptions {
  /// Examples per batch: the global batch, which `shard` splits among ranks.
  int64_t batchSize = 32;
  /// Visit the examples in a fresh seeded order each epoch (else in order).
  bool shuffle = true;
  /// Fixes every epoch's order and every sample's augmentation.
  uint64_t seed = 0;
  /// Drop the last batch of an epoch when it has fewer than batchSize
  /// examples. On by default because a compiled model has a fixed batch size;
  /// turn it off to see every example (evaluation with a second model, or
  /// padding the last batch yourself).
  bool dropLast = true;
  /// The example tensor the augmentation and normalization apply to, an f32
  /// [N, C, H, W] tensor ("images"); empty when neither is used.
  std::string imageName;
  /// Applied per sample before normalization, so crop padding is a zero
  /// (black) pixel, the background of Fashion-MNIST.
  AugmentationOptions augmentation;
  /// Applied per sample last: (x - mean[c]) / stddev[c].
  Normalization normalization;
  /// Data-parallel training: each batch holds only this rank's rows of the
  /// global batch (shardRows), in the epoch order, augmentation and
  /// normalization one process would use, so the ranks' batches together are
  /// one process's batch, row for row.
  DataShard shard;
};

class EpochBatches;

class DataLoader {
public:
  /// `examples`: tensors of any dtype sharing a first axis of N >= 1 examples;
  /// each batch holds the same names. InvalidArgument (naming the tensor or
  /// the option) for no tensors, an empty name, a rank-0 tensor, first axes
  /// that differ, a batch size below 1 or (with dropLast) above N, an image
  /// tensor that is not f32 [N, C, H, W], a shard whose rank is outside
  /// [0, count) or a batch size below the shard count (a rank with no rows of
  /// a full batch could not train), a normalization without one finite
  /// mean and one positive stddev per channel, a flip probability outside
  /// [0, 1], a negative crop padding or one larger than the image; NotFound
  /// when imageName names no tensor.
  static Expected<DataLoader> create(NamedTensors examples, DataLoaderOptions options);

  int64_t numExamples() const;
  /// Batches in one epoch (the same for every epoch).
  int64_t numBatches() const;
  /// The rows this rank reads of a full batch: batchSize without a shard.
  int64_t shardBatchSize() const;
  const DataLoaderOptions &options() const;
  /// Epoch `epoch`'s order and batches. The order depends only on (seed,
  /// epoch): resuming at epoch e gives the batches an uninterrupted run would.
  EpochBatches epoch(int64_t epoch) const;

  struct State;

private:
  explicit DataLoader(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

/// One epoch of a DataLoader. Cheap to copy (it shares the examples), and
/// batch() may be called from several threads at once.
class EpochBatches {
public:
  int64_t epoch() const { return epoch_; }
  /// Batches in the epoch.
  int64_t size() const;
  /// Every example index, in the order the epoch visits them.
  const std::vector<int64_t> &order() const { return *order_; }
  /// The example indices batch `index` holds (a slice of order(): this rank's
  /// rows of the global batch); empty for an index outside [0, size()), and
  /// for a rank left no rows of a last partial batch.
  std::span<const int64_t> batchExamples(int64_t index) const;
  /// Batch `index` of the epoch: each example tensor's rows for
  /// batchExamples(index), under the same name, the image tensor augmented
  /// (with a generator seeded from (seed, epoch, example index)) and then
  /// normalized. The same loader, epoch and index always give the same bytes.
  /// InvalidArgument for an index outside [0, size()).
  Expected<NamedTensors> batch(int64_t index) const;

private:
  friend class DataLoader;
  EpochBatches(std::shared_ptr<const DataLoader::State> state, int64_t epoch,
               std::shared_ptr<const std::vector<int64_t>> order)
      : state_(std::move(state)), epoch_(epoch), order_(std::move(order)) {}

  std::shared_ptr<const DataLoader::State> state_;
  int64_t epoch_;
  std::shared_ptr<const std::vector<int64_t>> order_;
};

} // namespace kiln::data
