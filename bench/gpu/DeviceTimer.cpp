// Event timing and the owning wrappers of device buffers and streams.
#include "bench/gpu/DeviceTimer.h"

#include <utility>

namespace kiln::bench {

Expected<double> timeOnStream(runtime::Device &device, runtime::Stream stream,
                              const std::function<Expected<void>()> &enqueue) {
  KILN_TRY(runtime::Event start, device.createEvent());
  auto end = device.createEvent();
  if (!end) {
    device.destroyEvent(start);
    return std::unexpected(end.error());
  }
  auto measure = [&]() -> Expected<double> {
    KILN_TRY_VOID(device.record(start, stream));
    KILN_TRY_VOID(enqueue());
    KILN_TRY_VOID(device.record(*end, stream));
    KILN_TRY_VOID(device.synchronize(stream));
    return device.elapsedMs(start, *end);
  };
  Expected<double> ms = measure();
  device.destroyEvent(start);
  device.destroyEvent(*end);
  return ms;
}

Expected<DeviceBuffer> DeviceBuffer::allocate(runtime::Device &device, int64_t bytes) {
  KILN_TRY(runtime::DevicePtr ptr, device.allocate(bytes));
  return DeviceBuffer(device, ptr, bytes);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : device_(other.device_), ptr_(std::exchange(other.ptr_, 0)), bytes_(other.bytes_) {}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_)
    device_->free(ptr_);
}

Expected<DeviceStream> DeviceStream::create(runtime::Device &device) {
  KILN_TRY(runtime::Stream stream, device.createStream());
  return DeviceStream(device, stream);
}

DeviceStream::DeviceStream(DeviceStream &&other) noexcept
    : device_(other.device_), stream_(std::exchange(other.stream_, runtime::Stream{})) {}

DeviceStream::~DeviceStream() {
  if (stream_.handle)
    device_->destroyStream(stream_);
}

} // namespace kiln::bench
