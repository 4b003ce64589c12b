// DeviceBatchUploader: copies training batches to a device on a copy stream of
// its own, through page-locked (pinned) host buffers, so that the upload of
// batch k+1 overlaps the compute on batch k. Pairs with the Prefetcher, which
// prepares batch k+1 on the host meanwhile (docs/training.md, "## Data").
#pragma once

#include "runtime/Device.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::data {

/// A batch resident on the device.
struct DeviceBatch {
  /// The uploader slot whose buffers hold it.
  int64_t slot = 0;
  /// One device buffer per tensor, by name (256-byte aligned).
  std::map<std::string, runtime::DevicePtr, std::less<>> buffers;
};

class DeviceBatchUploader {
public:
  /// `layout` fixes the names, dtypes and shapes of every batch (pass the
  /// first one). Each of `slots` (>= 2) slots owns a pinned host buffer and a
  /// device buffer of one batch. InvalidArgument for an empty layout or fewer
  /// than 2 slots; the device's errors for failed allocations.
  static Expected<std::unique_ptr<DeviceBatchUploader>>
  create(std::shared_ptr<runtime::Device> device, const NamedTensors &layout, int64_t slots = 2);

  /// Waits for the copy stream, then frees the buffers, events and stream.
  ~DeviceBatchUploader();
  DeviceBatchUploader(const DeviceBatchUploader &) = delete;
  DeviceBatchUploader &operator=(const DeviceBatchUploader &) = delete;

  /// Copies `batch` into the next free slot (round robin over the slots not
  /// holding a batch): waits on the host only
  /// until the slot's previous copies have left its pinned buffer, copies the
  /// bytes into it, and enqueues the device copies on the copy stream behind
  /// the compute that read the slot's previous batch (see release()).
  /// InvalidArgument when `batch` does not match the layout (naming the
  /// tensor) or when every slot holds a batch never released.
  Expected<DeviceBatch> upload(const NamedTensors &batch);

  /// Makes `computeStream` wait, on the device, until `batch`'s copies are
  /// done; the host does not block.
  Expected<void> waitUntilUploaded(const DeviceBatch &batch, runtime::Stream computeStream);

  /// Declares that the work reading `batch` has been enqueued on
  /// `computeStream`: the slot's device buffer is overwritten only after it.
  Expected<void> release(const DeviceBatch &batch, runtime::Stream computeStream);

  /// Gives `batch`'s slot back without compute having read it (a batch
  /// uploaded ahead and then not used, or a run that failed before its
  /// kernels). Nothing to do when the slot was already released.
  Expected<void> discard(const DeviceBatch &batch);

  /// True when `batch` (not yet released) holds exactly the bytes of `tensors`
  /// (same names, types and values): an upload made ahead of time can be used.
  bool holdsSame(const DeviceBatch &batch, const NamedTensors &tensors) const;

  int64_t numSlots() const { return static_cast<int64_t>(slots_.size()); }

private:
  struct Slot {
    void *pinned = nullptr;
    runtime::DevicePtr buffer = 0;
    runtime::Event uploaded; ///< recorded on the copy stream after the slot's copies
    runtime::Event consumed; ///< recorded on the compute stream by release()
    bool holdsBatch = false; ///< uploaded and not yet released
  };
  struct TensorLayout {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    int64_t offset = 0;
    int64_t bytes = 0;
  };

  explicit DeviceBatchUploader(std::shared_ptr<runtime::Device> device)
      : device_(std::move(device)) {}
  Expected<void> checkSlot(const DeviceBatch &batch) const;

  std::shared_ptr<runtime::Device> device_;
  runtime::Stream copyStream_;
  bool haveStream_ = false;
  std::vector<TensorLayout> layout_;
  int64_t slotBytes_ = 0;
  std::vector<Slot> slots_;
  int64_t nextSlot_ = 0;
};

} // namespace kiln::data
