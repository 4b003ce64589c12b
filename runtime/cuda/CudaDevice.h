// A GPU opened through the CUDA driver API: kiln's Device on the device's
// primary context, with its properties, peak figures and module loading.
#pragma once

#include "runtime/Device.h"
#include "support/Error.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

// The driver's opaque handle types, so this header needs no cuda.h.
struct CUctx_st;

namespace kiln::runtime::cuda {

struct CudaDriver;
class CudaModule;

/// What kiln asks of a GPU once, when it is opened.
struct CudaDeviceProperties {
  std::string name;                      ///< "NVIDIA H100 80GB HBM3"
  int ordinal = 0;                       ///< the driver's device number
  int ccMajor = 0, ccMinor = 0;          ///< compute capability: 9, 0 for sm_90
  int numSms = 0;                        ///< streaming multiprocessors
  int64_t totalMemoryBytes = 0;          ///< device memory
  int clockKhz = 0;                      ///< SM clock (the driver's "typical" rate)
  int memoryClockKhz = 0;                ///< peak memory clock
  int memoryBusWidthBits = 0;            ///< global memory bus width
  int64_t l2Bytes = 0;                   ///< L2 cache
  int64_t maxSharedBytesPerBlockOptin = 0; ///< shared memory a block may opt in to
  int maxThreadsPerBlock = 0;
  int maxThreadsPerSm = 0;
  int maxRegistersPerSm = 0;
  int warpSize = 32;
  int driverVersion = 0;                 ///< 13000 for CUDA 13.0

  /// "sm_90".
  std::string smName() const;
};

/// A compiled module as it arrives from codegen or a bundle: the cubin is used
/// when present and accepted, the PTX (through the driver's JIT) otherwise.
struct ModuleImage {
  std::string ptx;
  std::vector<std::byte> cubin;
  std::string description; ///< for errors, e.g. "12 kernels for sm_90a"
};

class CudaDevice;

/// Opens GPU `ordinal` through the driver (primary context). Errors are
/// ErrorCode::Unavailable and say exactly why: libcuda not found (listing what
/// was tried; $KILN_LIBCUDA overrides the path, nothing else tried then), only
/// the toolkit's stub library found (no driver installed), cuInit failing (with
/// the driver's error name), no device, ordinal out of range. Opening the same
/// ordinal again while the first is alive returns the same device.
Expected<std::shared_ptr<CudaDevice>> openCudaDevice(int ordinal = 0);

/// A GPU. Every method makes the device's primary context current on the calling
/// thread first (a cheap cuCtxGetCurrent when it already is), so any thread may use it.
class CudaDevice final : public Device, public std::enable_shared_from_this<CudaDevice> {
public:
  ~CudaDevice() override; ///< releases the primary context
  CudaDevice(const CudaDevice &) = delete;
  CudaDevice &operator=(const CudaDevice &) = delete;

  const CudaDeviceProperties &properties() const { return properties_; }

  /// Loads a module: the cubin when it is non-empty (and the driver accepts it),
  /// else the PTX through the driver's JIT, keeping the JIT error log as a note of
  /// the error (ErrorCode::CompileError).
  Expected<std::shared_ptr<CudaModule>> loadModule(const ModuleImage &image);

  /// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB, driver 13.0)".
  std::string describe() const override;
  /// DRAM bandwidth 2 * memory clock * bus width / 8 (double data rate), and
  /// fp32 SMs * lanes per SM * 2 * SM clock (64 lanes on sm_80 and older, 128 after).
  DevicePeak peak() const override;

  /// Device memory; an out-of-memory failure is ErrorCode::OutOfMemory naming
  /// the size asked for and the device's free and total memory.
  Expected<DevicePtr> allocate(int64_t bytes) override;
  void free(DevicePtr ptr) override;
  Expected<void *> allocatePinned(int64_t bytes) override;
  void freePinned(void *ptr) override;

  Expected<Stream> createStream() override;
  void destroyStream(Stream stream) override;
  /// Returns the first asynchronous error, naming the last kernel launched on `stream`.
  Expected<void> synchronize(Stream stream) override;

  Expected<void> copyToDevice(DevicePtr dst, const void *src, int64_t bytes,
                              Stream stream) override;
  Expected<void> copyToHost(void *dst, DevicePtr src, int64_t bytes, Stream stream) override;
  Expected<void> copyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes,
                              Stream stream) override;
  Expected<void> fill(DevicePtr dst, uint8_t value, int64_t bytes, Stream stream) override;

  Expected<Event> createEvent() override;
  void destroyEvent(Event event) override;
  Expected<void> record(Event event, Stream stream) override;
  Expected<void> waitEvent(Stream stream, Event event) override;
  Expected<bool> eventDone(Event event) override;
  Expected<double> elapsedMs(Event start, Event end) override;

  /// Captures in thread-local mode: only the capturing thread is barred from
  /// calls that would break the capture (cuMemAlloc, synchronizing), so other
  /// threads keep running models on the same device while one thread captures.
  Expected<void> beginCapture(Stream stream) override;
  /// Ends the capture and instantiates it; the captured graph itself is freed at
  /// once (the instantiated graph does not need it).
  Expected<GraphExec> endCapture(Stream stream) override;
  Expected<void> launchGraph(GraphExec graph, Stream stream) override;
  void destroyGraph(GraphExec graph) override;

  /// Makes the primary context current on the calling thread.
  Expected<void> makeCurrent() const;
  const CudaDriver &driver() const { return driver_; }
  /// Remembers which kernel was launched last on `stream`, so that an
  /// asynchronous fault found later can name it.
  void noteLaunch(Stream stream, const std::string &kernel);
  /// Adds "last kernel launched on this stream: X" to a fault found on `stream`.
  Error withLastKernel(Error error, Stream stream) const;

private:
  friend Expected<std::shared_ptr<CudaDevice>> openCudaDevice(int ordinal);
  CudaDevice(const CudaDriver &driver, int device, CUctx_st *context,
             CudaDeviceProperties properties);

  const CudaDriver &driver_;
  int device_;          ///< CUdevice
  CUctx_st *context_;   ///< the retained primary context
  CudaDeviceProperties properties_;
  mutable std::mutex lastKernelMutex_;
  std::unordered_map<void *, std::string> lastKernelOnStream_;
};

} // namespace kiln::runtime::cuda
