// The simulator device: checked host memory, operations run in enqueue order,
// launch graphs recorded and replayed.
#include "runtime/sim/SimDevice.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <limits>
#include <new>
#include <span>

namespace kiln::sim {

using runtime::DevicePtr;

/// A block of host memory on the 256-byte boundary cuMemAlloc guarantees (the
/// memory pool checks it).
struct SimDevice::Allocation {
  static constexpr std::align_val_t kAlignment{256};
  std::byte *data = nullptr;
  size_t size = 0;

  explicit Allocation(size_t bytes)
      // One byte at least, so every allocation has a distinct address.
      : data(static_cast<std::byte *>(::operator new(std::max<size_t>(bytes, 1), kAlignment))),
        size(bytes) {}
  ~Allocation() { ::operator delete(data, kAlignment); }
  Allocation(const Allocation &) = delete;
  Allocation &operator=(const Allocation &) = delete;
};

struct SimDevice::StreamState {
  bool capturing = false;
  std::vector<Operation> captured;
};

namespace {

double nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

/// The simulator's kernels: each launch interprets the kernel IR.
class SimDeviceKernel final : public runtime::DeviceKernel,
                              public std::enable_shared_from_this<SimDeviceKernel> {
public:
  SimDeviceKernel(std::shared_ptr<SimDevice> device, kir::Kernel kernel, SimOptions options)
      : device_(std::move(device)), kernel_(std::move(kernel)), options_(options) {}

  const std::string &name() const override { return kernel_.name; }

  Expected<void> launch(const DevicePtr *args, runtime::Stream stream) const override {
    std::vector<DevicePtr> arguments(args, args + kernel_.params.size());
    // A captured launch keeps the kernel alive as long as its graph.
    auto self = shared_from_this();
    return device_->enqueue(stream, [self, this, arguments]() -> Expected<void> {
      std::vector<std::span<std::byte>> buffers;
      for (size_t i = 0; i < kernel_.params.size(); ++i) {
        const kir::Buffer &param = *kernel_.params[i];
        int64_t bytes = param.size * dtypeByteSize(param.dtype);
        KILN_TRY(std::byte * data,
                 device_->deviceBytes(arguments[i], bytes,
                                      fmt::format("kernel {} parameter {}", kernel_.name,
                                                  param.name)));
        buffers.emplace_back(data, static_cast<size_t>(bytes));
      }
      device_->countKernelLaunch();
      KILN_TRY(SimStats stats, simulateKernel(kernel_, buffers, options_));
      (void)stats;
      return {};
    });
  }

private:
  std::shared_ptr<SimDevice> device_;
  kir::Kernel kernel_;
  SimOptions options_;
};

} // namespace

SimDevice::SimDevice(int64_t memoryLimitBytes) : memoryLimitBytes_(memoryLimitBytes) {
  // The default stream (the null handle) exists from the start.
  streams_.emplace(nullptr, std::make_unique<StreamState>());
}

SimDevice::~SimDevice() = default;

std::string SimDevice::describe() const { return "SIMT simulator (kernel IR on the host CPU)"; }

Expected<DevicePtr> SimDevice::allocate(int64_t bytes) {
  if (bytes < 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("simulator: cannot allocate {} bytes", bytes));
  std::lock_guard lock(mutex_);
  if (bytesInUse_ + bytes > memoryLimitBytes_)
    return makeError(ErrorCode::OutOfMemory,
                     fmt::format("simulator: out of device memory allocating {} bytes ({} of {} "
                                 "bytes in use)",
                                 bytes, bytesInUse_, memoryLimitBytes_));
  auto allocation = std::make_unique<Allocation>(static_cast<size_t>(bytes));
  auto ptr = reinterpret_cast<DevicePtr>(allocation->data);
  bytesInUse_ += bytes;
  allocations_.emplace(ptr, std::move(allocation));
  return ptr;
}

void SimDevice::free(DevicePtr ptr) {
  std::lock_guard lock(mutex_);
  auto it = allocations_.find(ptr);
  KILN_CHECK(it != allocations_.end(), "simulator: free of an address it did not allocate");
  bytesInUse_ -= static_cast<int64_t>(it->second->size);
  allocations_.erase(it);
}

Expected<void *> SimDevice::allocatePinned(int64_t bytes) {
  auto allocation = std::make_unique<Allocation>(static_cast<size_t>(bytes));
  void *ptr = allocation->data;
  std::lock_guard lock(mutex_);
  pinned_.emplace(ptr, std::move(allocation));
  return ptr;
}

void SimDevice::freePinned(void *ptr) {
  std::lock_guard lock(mutex_);
  KILN_CHECK(pinned_.erase(ptr) == 1, "simulator: freePinned of memory it did not allocate");
}

Expected<runtime::Stream> SimDevice::createStream() {
  auto state = std::make_unique<StreamState>();
  void *handle = state.get();
  std::lock_guard lock(mutex_);
  streams_.emplace(handle, std::move(state));
  return runtime::Stream{handle};
}

void SimDevice::destroyStream(runtime::Stream stream) {
  std::lock_guard lock(mutex_);
  KILN_CHECK(stream.handle != nullptr && streams_.erase(stream.handle) == 1,
             "simulator: destroyStream of an unknown stream");
}

Expected<void> SimDevice::synchronize(runtime::Stream stream) {
  std::lock_guard lock(mutex_);
  auto it = streams_.find(stream.handle);
  if (it == streams_.end())
    return makeError(ErrorCode::InvalidArgument, "simulator: synchronize of an unknown stream");
  if (it->second->capturing)
    return makeError(ErrorCode::InvalidArgument,
                     "simulator: synchronize of a stream that is capturing a launch graph");
  return {}; // every operation already ran when it was enqueued
}

Expected<void> SimDevice::enqueue(runtime::Stream stream, Operation operation) {
  {
    std::lock_guard lock(mutex_);
    auto it = streams_.find(stream.handle);
    if (it == streams_.end())
      return makeError(ErrorCode::InvalidArgument, "simulator: operation on an unknown stream");
    if (it->second->capturing) {
      it->second->captured.push_back(std::move(operation));
      return {};
    }
  }
  return operation();
}

Expected<std::byte *> SimDevice::deviceBytes(DevicePtr ptr, int64_t bytes,
                                             std::string_view what) const {
  std::lock_guard lock(mutex_);
  // The allocation that starts at or before ptr must also contain ptr + bytes.
  auto it = allocations_.upper_bound(ptr);
  if (it != allocations_.begin()) {
    --it;
    DevicePtr begin = it->first;
    auto size = static_cast<DevicePtr>(it->second->size);
    if (ptr >= begin && ptr - begin + static_cast<DevicePtr>(bytes) <= size)
      return reinterpret_cast<std::byte *>(ptr);
  }
  if (bytes == 0)
    return reinterpret_cast<std::byte *>(ptr);
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("simulator: {} at device address {:#x} ({} bytes) is not inside "
                               "one live device allocation",
                               what, ptr, bytes));
}

void SimDevice::countKernelLaunch() {
  std::lock_guard lock(mutex_);
  ++kernelLaunches_;
}

Expected<void> SimDevice::copyToDevice(DevicePtr dst, const void *src, int64_t bytes,
                                       runtime::Stream stream) {
  return enqueue(stream, [this, dst, src, bytes]() -> Expected<void> {
    KILN_TRY(std::byte * to, deviceBytes(dst, bytes, "copy to device destination"));
    if (bytes > 0)
      std::memcpy(to, src, static_cast<size_t>(bytes));
    std::lock_guard lock(mutex_);
    bytesToDevice_ += bytes;
    return {};
  });
}

Expected<void> SimDevice::copyToHost(void *dst, DevicePtr src, int64_t bytes,
                                     runtime::Stream stream) {
  return enqueue(stream, [this, dst, src, bytes]() -> Expected<void> {
    KILN_TRY(std::byte * from, deviceBytes(src, bytes, "copy to host source"));
    if (bytes > 0)
      std::memcpy(dst, from, static_cast<size_t>(bytes));
    std::lock_guard lock(mutex_);
    bytesToHost_ += bytes;
    return {};
  });
}

Expected<void> SimDevice::copyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes,
                                       runtime::Stream stream) {
  return enqueue(stream, [this, dst, src, bytes]() -> Expected<void> {
    KILN_TRY(std::byte * to, deviceBytes(dst, bytes, "device copy destination"));
    KILN_TRY(std::byte * from, deviceBytes(src, bytes, "device copy source"));
    if (bytes > 0)
      std::memmove(to, from, static_cast<size_t>(bytes));
    return {};
  });
}

Expected<void> SimDevice::fill(DevicePtr dst, uint8_t value, int64_t bytes,
                               runtime::Stream stream) {
  return enqueue(stream, [this, dst, value, bytes]() -> Expected<void> {
    KILN_TRY(std::byte * to, deviceBytes(dst, bytes, "fill destination"));
    if (bytes > 0)
      std::memset(to, value, static_cast<size_t>(bytes));
    return {};
  });
}

Expected<runtime::Event> SimDevice::createEvent() {
  auto time = std::make_unique<double>(std::numeric_limits<double>::quiet_NaN());
  void *handle = time.get();
  std::lock_guard lock(mutex_);
  events_.emplace(handle, std::move(time));
  return runtime::Event{handle};
}

void SimDevice::destroyEvent(runtime::Event event) {
  std::lock_guard lock(mutex_);
  KILN_CHECK(events_.erase(event.handle) == 1, "simulator: destroyEvent of an unknown event");
}

Expected<void> SimDevice::record(runtime::Event event, runtime::Stream stream) {
  {
    std::lock_guard lock(mutex_);
    if (!events_.contains(event.handle))
      return makeError(ErrorCode::InvalidArgument, "simulator: record of an unknown event");
  }
  return enqueue(stream, [this, event]() -> Expected<void> {
    std::lock_guard lock(mutex_);
    *events_.at(event.handle) = nowMs();
    return {};
  });
}

Expected<void> SimDevice::waitEvent(runtime::Stream stream, runtime::Event event) {
  std::lock_guard lock(mutex_);
  if (!events_.contains(event.handle) || !streams_.contains(stream.handle))
    return makeError(ErrorCode::InvalidArgument, "simulator: waitEvent on an unknown handle");
  return {}; // the recorded work has already run
}

Expected<bool> SimDevice::eventDone(runtime::Event event) {
  std::lock_guard lock(mutex_);
  if (!events_.contains(event.handle))
    return makeError(ErrorCode::InvalidArgument, "simulator: eventDone of an unknown event");
  return true; // recorded work has run; an event never recorded counts as done
}

Expected<double> SimDevice::elapsedMs(runtime::Event start, runtime::Event end) {
  std::lock_guard lock(mutex_);
  auto first = events_.find(start.handle), second = events_.find(end.handle);
  if (first == events_.end() || second == events_.end())
    return makeError(ErrorCode::InvalidArgument, "simulator: elapsedMs of an unknown event");
  if (std::isnan(*first->second) || std::isnan(*second->second))
    return makeError(ErrorCode::InvalidArgument,
                     "simulator: elapsedMs of an event that was never recorded");
  return *second->second - *first->second;
}

Expected<void> SimDevice::beginCapture(runtime::Stream stream) {
  std::lock_guard lock(mutex_);
  auto it = streams_.find(stream.handle);
  if (it == streams_.end() || stream.handle == nullptr)
    return makeError(ErrorCode::InvalidArgument,
                     "simulator: launch graphs are captured on a created stream, not the "
                     "default one");
  if (it->second->capturing)
    return makeError(ErrorCode::InvalidArgument, "simulator: the stream is already capturing");
  it->second->capturing = true;
  it->second->captured.clear();
  return {};
}

Expected<runtime::GraphExec> SimDevice::endCapture(runtime::Stream stream) {
  std::lock_guard lock(mutex_);
  auto it = streams_.find(stream.handle);
  if (it == streams_.end() || !it->second->capturing)
    return makeError(ErrorCode::InvalidArgument,
                     "simulator: endCapture on a stream that is not capturing");
  it->second->capturing = false;
  auto graph = std::make_unique<std::vector<Operation>>(std::move(it->second->captured));
  it->second->captured.clear();
  void *handle = graph.get();
  graphs_.emplace(handle, std::move(graph));
  return runtime::GraphExec{handle};
}

Expected<void> SimDevice::launchGraph(runtime::GraphExec graph, runtime::Stream stream) {
  const std::vector<Operation> *operations = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto it = graphs_.find(graph.handle);
    if (it == graphs_.end())
      return makeError(ErrorCode::InvalidArgument, "simulator: launch of an unknown graph");
    operations = it->second.get();
    ++graphLaunches_;
  }
  return enqueue(stream, [operations]() -> Expected<void> {
    for (const Operation &operation : *operations)
      KILN_TRY_VOID(operation());
    return {};
  });
}

void SimDevice::destroyGraph(runtime::GraphExec graph) {
  std::lock_guard lock(mutex_);
  KILN_CHECK(graphs_.erase(graph.handle) == 1, "simulator: destroyGraph of an unknown graph");
}

std::shared_ptr<const runtime::DeviceKernel> SimDevice::loadKernel(kir::Kernel kernel,
                                                                   SimOptions options) {
  return std::make_shared<SimDeviceKernel>(shared_from_this(), std::move(kernel), options);
}

SimDevice::Census SimDevice::census() const {
  std::lock_guard lock(mutex_);
  return {static_cast<int64_t>(allocations_.size()),
          bytesInUse_,
          static_cast<int64_t>(pinned_.size()),
          static_cast<int64_t>(streams_.size()) - 1, // not the default stream
          static_cast<int64_t>(events_.size()),
          static_cast<int64_t>(graphs_.size()),
          kernelLaunches_,
          graphLaunches_,
          bytesToDevice_,
          bytesToHost_};
}

std::shared_ptr<SimDevice> sharedSimDevice() {
  static std::shared_ptr<SimDevice> device = std::make_shared<SimDevice>();
  return device;
}

} // namespace kiln::sim
