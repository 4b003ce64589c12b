// The SIMT simulator as a Device: device memory is checked host memory, every
// operation runs at once in enqueue order, and a captured launch graph is the
// list of operations replayed. It lets the device executor's every path —
// staging, launch graphs, events, the memory pool — run where there is no GPU.
#pragma once

#include "ir/kernel/KernelIR.h"
#include "runtime/Device.h"
#include "runtime/sim/Simulator.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace kiln::sim {

class SimDevice final : public runtime::Device,
                        public std::enable_shared_from_this<SimDevice> {
public:
  /// `memoryLimitBytes` bounds the device memory, so out-of-memory paths can be tested.
  explicit SimDevice(int64_t memoryLimitBytes = int64_t{1} << 40);
  ~SimDevice() override;

  std::string describe() const override;
  runtime::DevicePeak peak() const override { return {}; }

  Expected<runtime::DevicePtr> allocate(int64_t bytes) override;
  void free(runtime::DevicePtr ptr) override;
  Expected<void *> allocatePinned(int64_t bytes) override;
  void freePinned(void *ptr) override;

  Expected<runtime::Stream> createStream() override;
  void destroyStream(runtime::Stream stream) override;
  Expected<void> synchronize(runtime::Stream stream) override;

  Expected<void> copyToDevice(runtime::DevicePtr dst, const void *src, int64_t bytes,
                              runtime::Stream stream) override;
  Expected<void> copyToHost(void *dst, runtime::DevicePtr src, int64_t bytes,
                            runtime::Stream stream) override;
  Expected<void> copyOnDevice(runtime::DevicePtr dst, runtime::DevicePtr src, int64_t bytes,
                              runtime::Stream stream) override;
  Expected<void> fill(runtime::DevicePtr dst, uint8_t value, int64_t bytes,
                      runtime::Stream stream) override;

  Expected<runtime::Event> createEvent() override;
  void destroyEvent(runtime::Event event) override;
  Expected<void> record(runtime::Event event, runtime::Stream stream) override;
  Expected<void> waitEvent(runtime::Stream stream, runtime::Event event) override;
  Expected<bool> eventDone(runtime::Event event) override;
  Expected<double> elapsedMs(runtime::Event start, runtime::Event end) override;

  Expected<void> beginCapture(runtime::Stream stream) override;
  Expected<runtime::GraphExec> endCapture(runtime::Stream stream) override;
  Expected<void> launchGraph(runtime::GraphExec graph, runtime::Stream stream) override;
  void destroyGraph(runtime::GraphExec graph) override;

  /// A kernel of this device: each launch simulates `kernel` on its arguments.
  std::shared_ptr<const runtime::DeviceKernel> loadKernel(kir::Kernel kernel,
                                                          SimOptions options = {});

  /// What the device holds now, for tests: live allocations, their bytes,
  /// live streams, events and graphs.
  struct Census {
    int64_t allocations = 0, bytes = 0, pinned = 0, streams = 0, events = 0, graphs = 0;
    int64_t kernelLaunches = 0, graphLaunches = 0;
    /// Bytes copied between host and device so far.
    int64_t bytesToDevice = 0, bytesToHost = 0;
  };
  Census census() const;

  /// Runs `operation` now, or records it when `stream` is capturing.
  using Operation = std::function<Expected<void>()>;
  Expected<void> enqueue(runtime::Stream stream, Operation operation);
  /// Checks that [ptr, ptr + bytes) lies inside one live allocation.
  Expected<std::byte *> deviceBytes(runtime::DevicePtr ptr, int64_t bytes,
                                    std::string_view what) const;
  void countKernelLaunch();

private:
  struct Allocation;
  struct StreamState;
  mutable std::mutex mutex_;
  int64_t memoryLimitBytes_;
  int64_t bytesInUse_ = 0;
  std::map<runtime::DevicePtr, std::unique_ptr<Allocation>> allocations_;
  std::map<void *, std::unique_ptr<Allocation>> pinned_;
  std::map<void *, std::unique_ptr<StreamState>> streams_;
  std::map<void *, std::unique_ptr<double>> events_;  ///< recorded time in ms, NaN before
  std::map<void *, std::unique_ptr<std::vector<Operation>>> graphs_;
  int64_t kernelLaunches_ = 0, graphLaunches_ = 0;
  int64_t bytesToDevice_ = 0, bytesToHost_ = 0;
};

/// The process's simulator device (shared by every model compiled for `sim`).
std::shared_ptr<SimDevice> sharedSimDevice();

} // namespace kiln::sim
