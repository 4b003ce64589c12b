// A stand-in "GPU" in host memory, so kiln_gpu_bench --host-device can run
// every section's logic (checks, tables, the report) on a machine without a
// GPU. Its figures measure the CPU and mean nothing for a GPU.
#include "bench/gpu/BenchDevice.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace kiln::bench {

namespace {

class HostMemoryDevice final : public runtime::Device {
public:
  std::string describe() const override { return "host memory (a CPU stand-in, not a GPU)"; }
  runtime::DevicePeak peak() const override { return {}; }

  Expected<runtime::DevicePtr> allocate(int64_t bytes) override {
    void *memory = std::aligned_alloc(256, static_cast<size_t>((bytes + 255) / 256 * 256));
    if (!memory)
      return makeError(ErrorCode::OutOfMemory, "host allocation failed");
    return reinterpret_cast<runtime::DevicePtr>(memory);
  }
  void free(runtime::DevicePtr ptr) override { std::free(reinterpret_cast<void *>(ptr)); }
  Expected<void *> allocatePinned(int64_t bytes) override {
    KILN_TRY(runtime::DevicePtr ptr, allocate(bytes));
    return reinterpret_cast<void *>(ptr);
  }
  void freePinned(void *ptr) override { std::free(ptr); }

  Expected<runtime::Stream> createStream() override { return runtime::Stream{this}; }
  void destroyStream(runtime::Stream) override {}
  Expected<void> synchronize(runtime::Stream) override { return {}; }

  Expected<void> copyToDevice(runtime::DevicePtr dst, const void *src, int64_t bytes,
                              runtime::Stream) override {
    std::memcpy(reinterpret_cast<void *>(dst), src, static_cast<size_t>(bytes));
    return {};
  }
  Expected<void> copyToHost(void *dst, runtime::DevicePtr src, int64_t bytes,
                            runtime::Stream) override {
    std::memcpy(dst, reinterpret_cast<const void *>(src), static_cast<size_t>(bytes));
    return {};
  }
  Expected<void> copyOnDevice(runtime::DevicePtr dst, runtime::DevicePtr src, int64_t bytes,
                              runtime::Stream) override {
    std::memcpy(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src),
                static_cast<size_t>(bytes));
    return {};
  }
  Expected<void> fill(runtime::DevicePtr dst, uint8_t value, int64_t bytes,
                      runtime::Stream) override {
    std::memset(reinterpret_cast<void *>(dst), value, static_cast<size_t>(bytes));
    return {};
  }

  // An event is the time it was recorded (work here is synchronous).
  Expected<runtime::Event> createEvent() override { return runtime::Event{new double(0)}; }
  void destroyEvent(runtime::Event event) override { delete static_cast<double *>(event.handle); }
  Expected<void> record(runtime::Event event, runtime::Stream) override {
    *static_cast<double *>(event.handle) =
        std::chrono::duration<double, std::milli>(
            std::chrono::steady_clock::now().time_since_epoch())
            .count();
    return {};
  }
  Expected<void> waitEvent(runtime::Stream, runtime::Event) override { return {}; }
  Expected<bool> eventDone(runtime::Event) override { return true; } // work runs at once
  Expected<double> elapsedMs(runtime::Event start, runtime::Event end) override {
    return *static_cast<double *>(end.handle) - *static_cast<double *>(start.handle);
  }

  Expected<void> beginCapture(runtime::Stream) override { return unsupported(); }
  Expected<runtime::GraphExec> endCapture(runtime::Stream) override { return unsupported(); }
  Expected<void> launchGraph(runtime::GraphExec, runtime::Stream) override { return unsupported(); }
  void destroyGraph(runtime::GraphExec) override {}

private:
  static std::unexpected<Error> unsupported() {
    return makeError(ErrorCode::Unsupported, "the host stand-in has no launch graphs");
  }
};

} // namespace

BenchDevice openHostBenchDevice() {
  BenchDevice bench;
  bench.device = std::make_shared<HostMemoryDevice>();
  bench.name = "host";
  bench.description = bench.device->describe();
  bench.numSms = static_cast<int>(std::thread::hardware_concurrency());
  bench.driverVersion = "none";
  return bench;
}

} // namespace kiln::bench
