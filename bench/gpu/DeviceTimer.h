// Times work enqueued on a stream with a pair of device events, and owns the
// device buffers and streams a section allocates.
#pragma once

#include "runtime/Device.h"
#include "support/Error.h"

#include <functional>

namespace kiln::bench {

/// Device milliseconds of what `enqueue` puts on `stream`, between an event
/// recorded before it and one after; waits for both.
Expected<double> timeOnStream(runtime::Device &device, runtime::Stream stream,
                              const std::function<Expected<void>()> &enqueue);

/// A device allocation freed when it goes out of scope.
class DeviceBuffer {
public:
  static Expected<DeviceBuffer> allocate(runtime::Device &device, int64_t bytes);
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&) = delete;
  ~DeviceBuffer();
  runtime::DevicePtr ptr() const { return ptr_; }
  int64_t bytes() const { return bytes_; }

private:
  DeviceBuffer(runtime::Device &device, runtime::DevicePtr ptr, int64_t bytes)
      : device_(&device), ptr_(ptr), bytes_(bytes) {}
  runtime::Device *device_;
  runtime::DevicePtr ptr_;
  int64_t bytes_;
};

/// A stream destroyed when it goes out of scope.
class DeviceStream {
public:
  static Expected<DeviceStream> create(runtime::Device &device);
  DeviceStream(DeviceStream &&other) noexcept;
  DeviceStream &operator=(DeviceStream &&) = delete;
  ~DeviceStream();
  runtime::Stream get() const { return stream_; }

private:
  DeviceStream(runtime::Device &device, runtime::Stream stream) : device_(&device), stream_(stream) {}
  runtime::Device *device_;
  runtime::Stream stream_;
};

} // namespace kiln::bench
