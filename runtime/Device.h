// The device interface the executor runs a launch plan on: memory, copies,
// streams, events, kernel launches and launch-graph capture. The CUDA driver
// (runtime/cuda) and the SIMT simulator (runtime/sim) implement it, so the
// executor's every path (staging, graphs, timing) is exercised without a GPU.
#pragma once

#include "support/DType.h"
#include "support/Error.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::runtime {

/// A device address: a CUdeviceptr on a GPU, a host address on the simulator.
using DevicePtr = uint64_t;

/// A device's stream (CUstream). The null handle is the device's default stream.
struct Stream {
  void *handle = nullptr;
};

/// A device's event (CUevent), for ordering and timing.
struct Event {
  void *handle = nullptr;
};

/// An instantiated launch graph (CUgraphExec).
struct GraphExec {
  void *handle = nullptr;
};

/// A tensor map a kernel takes by value after its buffer pointers (kir::TensorMap): the
/// launcher encodes it (cuTensorMapEncodeTiled) from the address of buffer parameter `param`.
/// Sizes in elements, innermost dimension first; `strides` for dimensions 1 and up.
struct TensorMapArg {
  int param = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> dims, strides, box;
  bool swizzle128 = true; ///< the 128-byte swizzle, else none
  bool operator==(const TensorMapArg &) const = default;
};

/// The launch shape of a kernel, and the tensor maps its launches pass.
struct LaunchDims {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t sharedBytes = 0; ///< dynamic shared memory (kir::GpuLaunch::dynamicSharedBytes)
  std::vector<TensorMapArg> tensorMaps;
};

/// What the profiler divides by to report a fraction of peak.
struct DevicePeak {
  double memoryBytesPerSecond = 0; ///< DRAM bandwidth (0: unknown)
  double f32FlopsPerSecond = 0;    ///< SIMT fp32 FMA throughput, counting an FMA as 2 (0: unknown)
};

/// A kernel loaded on a device, ready to launch.
class DeviceKernel {
public:
  virtual ~DeviceKernel() = default;
  virtual const std::string &name() const = 0;
  /// Enqueues the kernel on `stream`; args[i] is the device address of its i-th buffer
  /// parameter (the tensor maps that follow them are encoded from these).
  virtual Expected<void> launch(const DevicePtr *args, Stream stream) const = 0;
  /// Called before launches on `stream` are captured into a launch graph,
  /// where allocating fails: a kernel that keeps per-stream state (a library
  /// call's handle and workspace) creates it here. Kernels without any need nothing.
  virtual Expected<void> prepare(Stream stream) const {
    (void)stream;
    return {};
  }
};

/// A device. Every method is safe to call from several threads at once.
class Device {
public:
  virtual ~Device() = default;

  /// One line naming the device, e.g. "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB)".
  virtual std::string describe() const = 0;
  virtual DevicePeak peak() const = 0;

  /// Raw device memory (the memory pool caches on top of these).
  virtual Expected<DevicePtr> allocate(int64_t bytes) = 0;
  virtual void free(DevicePtr ptr) = 0;
  /// Page-locked host memory, for asynchronous copies.
  virtual Expected<void *> allocatePinned(int64_t bytes) = 0;
  virtual void freePinned(void *ptr) = 0;

  virtual Expected<Stream> createStream() = 0;
  virtual void destroyStream(Stream stream) = 0;
  /// Blocks until everything enqueued on `stream` has finished; returns the
  /// first asynchronous error (a faulting kernel) it finds.
  virtual Expected<void> synchronize(Stream stream) = 0;

  /// Asynchronous copies and fills on `stream`.
  virtual Expected<void> copyToDevice(DevicePtr dst, const void *src, int64_t bytes,
                                      Stream stream) = 0;
  virtual Expected<void> copyToHost(void *dst, DevicePtr src, int64_t bytes, Stream stream) = 0;
  virtual Expected<void> copyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes,
                                      Stream stream) = 0;
  virtual Expected<void> fill(DevicePtr dst, uint8_t value, int64_t bytes, Stream stream) = 0;

  /// Events: recorded on a stream, waited on by another, timed against each other.
  virtual Expected<Event> createEvent() = 0;
  virtual void destroyEvent(Event event) = 0;
  virtual Expected<void> record(Event event, Stream stream) = 0;
  virtual Expected<void> waitEvent(Stream stream, Event event) = 0;
  /// Whether the work before the event's last record has finished (true for an
  /// event never recorded); does not block.
  virtual Expected<bool> eventDone(Event event) = 0;
  /// Milliseconds between two recorded events; both must have completed.
  virtual Expected<double> elapsedMs(Event start, Event end) = 0;

  /// Launch graphs: what is enqueued on `stream` between beginCapture and
  /// endCapture is recorded instead of run, and replayed by launchGraph.
  virtual Expected<void> beginCapture(Stream stream) = 0;
  virtual Expected<GraphExec> endCapture(Stream stream) = 0;
  virtual Expected<void> launchGraph(GraphExec graph, Stream stream) = 0;
  virtual void destroyGraph(GraphExec graph) = 0;
};

} // namespace kiln::runtime
