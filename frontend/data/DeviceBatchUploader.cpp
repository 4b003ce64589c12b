// Double-buffered batch uploads: pinned staging, a copy stream, and events
// that order the copies against the compute that reads the batches.
#include "frontend/data/DeviceBatchUploader.h"

#include <cstring>
#include <fmt/format.h>
#include <thread>

namespace kiln::data {

namespace {

constexpr int64_t kBufferAlignment = 256;

int64_t alignUp(int64_t value) {
  return (value + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

std::string shapeText(DType dtype, const std::vector<int64_t> &shape) {
  return fmt::format("{}[{}]", dtypeName(dtype), fmt::join(shape, ","));
}

} // namespace

Expected<std::unique_ptr<DeviceBatchUploader>>
DeviceBatchUploader::create(std::shared_ptr<runtime::Device> device, const NamedTensors &layout,
                            int64_t slots) {
  if (!device)
    return makeError(ErrorCode::InvalidArgument, "batch uploader: no device");
  if (layout.empty())
    return makeError(ErrorCode::InvalidArgument, "batch uploader: the layout batch is empty");
  if (slots < 2)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("batch uploader: {} slots; double buffering needs at least 2",
                                 slots));
  // Built before any device object, and the destructor frees whatever exists,
  // so a failure part way leaks nothing.
  std::unique_ptr<DeviceBatchUploader> uploader(new DeviceBatchUploader(std::move(device)));
  for (const auto &[name, tensor] : layout) {
    auto bytes = static_cast<int64_t>(tensor.byteSize());
    uploader->layout_.push_back({name, tensor.dtype(), tensor.shape(), uploader->slotBytes_, bytes});
    uploader->slotBytes_ += alignUp(std::max<int64_t>(bytes, 1));
  }
  runtime::Device &dev = *uploader->device_;
  KILN_TRY(uploader->copyStream_, dev.createStream());
  uploader->haveStream_ = true;
  for (int64_t i = 0; i < slots; ++i) {
    Slot &slot = uploader->slots_.emplace_back();
    KILN_TRY(slot.pinned, dev.allocatePinned(uploader->slotBytes_));
    KILN_TRY(slot.buffer, dev.allocate(uploader->slotBytes_));
    KILN_TRY(slot.uploaded, dev.createEvent());
    KILN_TRY(slot.consumed, dev.createEvent());
  }
  return uploader;
}

DeviceBatchUploader::~DeviceBatchUploader() {
  runtime::Device &dev = *device_;
  if (haveStream_)
    (void)dev.synchronize(copyStream_); // a fault there was reported by the copies' users
  for (Slot &slot : slots_) {
    if (slot.consumed.handle)
      dev.destroyEvent(slot.consumed);
    if (slot.uploaded.handle)
      dev.destroyEvent(slot.uploaded);
    if (slot.buffer)
      dev.free(slot.buffer);
    if (slot.pinned)
      dev.freePinned(slot.pinned);
  }
  if (haveStream_)
    dev.destroyStream(copyStream_);
}

Expected<DeviceBatch> DeviceBatchUploader::upload(const NamedTensors &batch) {
  if (batch.size() != layout_.size())
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("batch uploader: the batch has {} tensors, the layout {}",
                                 batch.size(), layout_.size()));
  for (const TensorLayout &tensor : layout_) {
    auto found = batch.find(tensor.name);
    if (found == batch.end())
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("batch uploader: the batch has no tensor \"{}\"", tensor.name));
    if (found->second.dtype() != tensor.dtype || found->second.shape() != tensor.shape)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("batch uploader: tensor \"{}\" is {}, the layout says {}",
                                   tensor.name, found->second.typeStr(),
                                   shapeText(tensor.dtype, tensor.shape)));
  }
  // Round robin over the slots not holding a batch (one uploaded ahead may
  // wait in its slot while others turn over).
  int64_t index = nextSlot_;
  for (int64_t tried = 0; slots_[static_cast<size_t>(index)].holdsBatch; ++tried) {
    if (tried + 1 == numSlots())
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("batch uploader: all {} slots hold batches that were never "
                                   "released; call release() once the work reading one is "
                                   "enqueued",
                                   numSlots()));
    index = (index + 1) % numSlots();
  }
  Slot &slot = slots_[static_cast<size_t>(index)];
  runtime::Device &dev = *device_;
  // The pinned buffer may still feed the slot's previous copies.
  for (;;) {
    KILN_TRY(bool done, dev.eventDone(slot.uploaded));
    if (done)
      break;
    std::this_thread::yield();
  }
  DeviceBatch result;
  result.slot = index;
  auto *staging = static_cast<uint8_t *>(slot.pinned);
  for (const TensorLayout &tensor : layout_) {
    std::memcpy(staging + tensor.offset, batch.find(tensor.name)->second.bytes().data(),
                static_cast<size_t>(tensor.bytes));
    result.buffers.emplace(tensor.name, slot.buffer + static_cast<uint64_t>(tensor.offset));
  }
  // The device buffer may still be read by the compute on the previous batch.
  KILN_TRY_VOID(dev.waitEvent(copyStream_, slot.consumed));
  KILN_TRY_VOID(dev.copyToDevice(slot.buffer, staging, slotBytes_, copyStream_));
  KILN_TRY_VOID(dev.record(slot.uploaded, copyStream_));
  slot.holdsBatch = true;
  nextSlot_ = (index + 1) % numSlots();
  return result;
}

Expected<void> DeviceBatchUploader::checkSlot(const DeviceBatch &batch) const {
  if (batch.slot < 0 || batch.slot >= numSlots() ||
      !slots_[static_cast<size_t>(batch.slot)].holdsBatch)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("batch uploader: slot {} holds no uploaded batch", batch.slot));
  return {};
}

Expected<void> DeviceBatchUploader::waitUntilUploaded(const DeviceBatch &batch,
                                                      runtime::Stream computeStream) {
  KILN_TRY_VOID(checkSlot(batch));
  return device_->waitEvent(computeStream, slots_[static_cast<size_t>(batch.slot)].uploaded);
}

Expected<void> DeviceBatchUploader::release(const DeviceBatch &batch,
                                            runtime::Stream computeStream) {
  KILN_TRY_VOID(checkSlot(batch));
  Slot &slot = slots_[static_cast<size_t>(batch.slot)];
  KILN_TRY_VOID(device_->record(slot.consumed, computeStream));
  slot.holdsBatch = false;
  return {};
}

Expected<void> DeviceBatchUploader::discard(const DeviceBatch &batch) {
  if (batch.slot < 0 || batch.slot >= numSlots() ||
      !slots_[static_cast<size_t>(batch.slot)].holdsBatch)
    return {};
  // Nothing computes on it: the copy stream itself marks it consumed.
  return release(batch, copyStream_);
}

bool DeviceBatchUploader::holdsSame(const DeviceBatch &batch, const NamedTensors &tensors) const {
  if (batch.slot < 0 || batch.slot >= numSlots() || tensors.size() != layout_.size())
    return false;
  const Slot &slot = slots_[static_cast<size_t>(batch.slot)];
  if (!slot.holdsBatch)
    return false;
  const auto *staging = static_cast<const uint8_t *>(slot.pinned);
  for (const TensorLayout &tensor : layout_) {
    auto found = tensors.find(tensor.name);
    if (found == tensors.end() || found->second.dtype() != tensor.dtype ||
        found->second.shape() != tensor.shape ||
        (tensor.bytes > 0 && std::memcmp(staging + tensor.offset, found->second.bytes().data(),
                                     static_cast<size_t>(tensor.bytes)) != 0))
      return false;
  }
  return true;
}

} // namespace kiln::data
