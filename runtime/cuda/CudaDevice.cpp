// CudaDevice: opening a GPU on its primary context, its properties and peak
// figures, and the Device methods as thin, checked driver calls.
#include "runtime/cuda/CudaDevice.h"

#include "runtime/DeviceMemoryPool.h"
#include "runtime/cuda/CudaDriver.h"

#include <fmt/format.h>

#include <map>

namespace kiln::runtime::cuda {
namespace {

CUstream toCu(Stream stream) { return static_cast<CUstream>(stream.handle); }
CUevent toCu(Event event) { return static_cast<CUevent>(event.handle); }
CUgraphExec toCu(GraphExec graph) { return static_cast<CUgraphExec>(graph.handle); }

Expected<void> checkSize(int64_t bytes, std::string_view operation) {
  if (bytes < 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{}: negative size {}", operation, bytes));
  return {};
}

Expected<CudaDeviceProperties> queryProperties(const CudaDriver &driver, CUdevice device,
                                               int ordinal) {
  const CudaDriverTable &api = driver.api;
  CudaDeviceProperties properties;
  properties.ordinal = ordinal;
  properties.driverVersion = driver.version;
  char name[256] = {};
  KILN_TRY_VOID(driver.check(api.deviceGetName(name, sizeof(name) - 1, device), "cuDeviceGetName"));
  properties.name = name;
  size_t totalBytes = 0;
  KILN_TRY_VOID(driver.check(api.deviceTotalMem(&totalBytes, device), "cuDeviceTotalMem"));
  properties.totalMemoryBytes = static_cast<int64_t>(totalBytes);

  auto attribute = [&](CUdevice_attribute which, const char *what) -> Expected<int> {
    int value = 0;
    KILN_TRY_VOID(driver.check(api.deviceGetAttribute(&value, which, device),
                               fmt::format("cuDeviceGetAttribute({})", what)));
    return value;
  };
  KILN_TRY(properties.ccMajor, attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "major"));
  KILN_TRY(properties.ccMinor, attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "minor"));
  KILN_TRY(properties.numSms, attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SMs"));
  // The clocks feed only peak(): a driver that no longer reports one (CUDA 13
  // dropped them from the runtime's device properties) leaves the peak unknown (0)
  // rather than the GPU unusable.
  auto optionalAttribute = [&](CUdevice_attribute which) {
    int value = 0;
    return api.deviceGetAttribute(&value, which, device) == CUDA_SUCCESS ? value : 0;
  };
  properties.clockKhz = optionalAttribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  properties.memoryClockKhz = optionalAttribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  properties.memoryBusWidthBits = optionalAttribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  KILN_TRY(int l2, attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2"));
  properties.l2Bytes = l2;
  KILN_TRY(int sharedOptin,
           attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "shared optin"));
  properties.maxSharedBytesPerBlockOptin = sharedOptin;
  KILN_TRY(properties.maxThreadsPerBlock,
           attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "threads per block"));
  KILN_TRY(properties.maxThreadsPerSm,
           attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "threads per SM"));
  KILN_TRY(properties.maxRegistersPerSm,
           attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "registers per SM"));
  KILN_TRY(properties.warpSize, attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size"));
  return properties;
}

} // namespace

std::string CudaDeviceProperties::smName() const {
  return fmt::format("sm_{}{}", ccMajor, ccMinor);
}

Expected<std::shared_ptr<CudaDevice>> openCudaDevice(int ordinal) {
  KILN_TRY(const CudaDriver *driver, cudaDriver());
  const CudaDriverTable &api = driver->api;
  int count = 0;
  KILN_TRY_VOID(driver->check(api.deviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("no CUDA device: the driver ({}, CUDA {}) sees no GPU",
                                 driver->libraryPath, driver->versionText()));
  if (ordinal < 0 || ordinal >= count)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("GPU ordinal {} is out of range: the driver sees {} device{} "
                                 "(0 to {})",
                                 ordinal, count, count == 1 ? "" : "s", count - 1));

  // One CudaDevice (one primary-context retain) per GPU while any user holds it.
  static std::mutex registryMutex;
  static std::map<std::pair<const CudaDriver *, int>, std::weak_ptr<CudaDevice>> registry;
  std::lock_guard lock(registryMutex);
  std::weak_ptr<CudaDevice> &entry = registry[{driver, ordinal}];
  if (std::shared_ptr<CudaDevice> open = entry.lock())
    return open;

  CUdevice device = 0;
  KILN_TRY_VOID(driver->check(api.deviceGet(&device, ordinal), "cuDeviceGet"));
  KILN_TRY(CudaDeviceProperties properties, queryProperties(*driver, device, ordinal));
  CUcontext context = nullptr;
  KILN_TRY_VOID(driver->check(api.primaryCtxRetain(&context, device),
                              fmt::format("cuDevicePrimaryCtxRetain (GPU {})", ordinal)));
  std::shared_ptr<CudaDevice> opened(
      new CudaDevice(*driver, device, context, std::move(properties)));
  entry = opened;
  return opened;
}

CudaDevice::CudaDevice(const CudaDriver &driver, int device, CUctx_st *context,
                       CudaDeviceProperties properties)
    : driver_(driver), device_(device), context_(context), properties_(std::move(properties)) {}

CudaDevice::~CudaDevice() { (void)driver_.api.primaryCtxRelease(device_); }

Expected<void> CudaDevice::makeCurrent() const {
  CUcontext current = nullptr;
  KILN_TRY_VOID(driver_.check(driver_.api.ctxGetCurrent(&current), "cuCtxGetCurrent"));
  if (current != context_)
    KILN_TRY_VOID(driver_.check(driver_.api.ctxSetCurrent(context_), "cuCtxSetCurrent"));
  return {};
}

std::string CudaDevice::describe() const {
  return fmt::format("{} ({}, {} SMs, {}, driver {})", properties_.name, properties_.smName(),
                     properties_.numSms, shortByteSizeText(properties_.totalMemoryBytes),
                     driver_.versionText());
}

DevicePeak CudaDevice::peak() const {
  const CudaDeviceProperties &p = properties_;
  DevicePeak peak;
  // Memory transfers on both clock edges (DDR/HBM), bus width in bits.
  peak.memoryBytesPerSecond = 2.0 * p.memoryClockKhz * 1e3 * (p.memoryBusWidthBits / 8.0);
  // FP32 lanes per SM: 64 on sm_80 (A100) and older, 128 on sm_86, sm_89 and sm_90
  // (and assumed for newer architectures). An FMA counts as two flops.
  int lanesPerSm = (p.ccMajor < 8 || (p.ccMajor == 8 && p.ccMinor == 0)) ? 64 : 128;
  peak.f32FlopsPerSecond = static_cast<double>(p.numSms) * lanesPerSm * 2.0 * p.clockKhz * 1e3;
  return peak;
}

Expected<DevicePtr> CudaDevice::allocate(int64_t bytes) {
  if (bytes <= 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("cuMemAlloc: size must be positive, got {}", bytes));
  KILN_TRY_VOID(makeCurrent());
  CUdeviceptr ptr = 0;
  CUresult result = driver_.api.memAlloc(&ptr, static_cast<size_t>(bytes));
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t freeBytes = 0, totalBytes = 0;
    std::string memory = "its free memory is unknown";
    if (driver_.api.memGetInfo(&freeBytes, &totalBytes) == CUDA_SUCCESS)
      memory = fmt::format("it has {} free of {}", shortByteSizeText(freeBytes),
                           shortByteSizeText(totalBytes));
    return makeError(ErrorCode::OutOfMemory,
                     fmt::format("cuMemAlloc of {} ({} bytes) failed on GPU {} ({}): out of "
                                 "device memory; {}",
                                 shortByteSizeText(bytes), bytes, properties_.ordinal,
                                 properties_.name, memory));
  }
  KILN_TRY_VOID(driver_.check(result, fmt::format("cuMemAlloc of {} bytes", bytes)));
  return static_cast<DevicePtr>(ptr);
}

void CudaDevice::free(DevicePtr ptr) {
  if (!ptr || !makeCurrent())
    return;
  (void)driver_.api.memFree(static_cast<CUdeviceptr>(ptr));
}

Expected<void *> CudaDevice::allocatePinned(int64_t bytes) {
  if (bytes <= 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("cuMemHostAlloc: size must be positive, got {}", bytes));
  KILN_TRY_VOID(makeCurrent());
  void *ptr = nullptr;
  // Portable: the pages are pinned for every context, so any GPU may copy from them.
  KILN_TRY_VOID(driver_.check(
      driver_.api.memHostAlloc(&ptr, static_cast<size_t>(bytes), CU_MEMHOSTALLOC_PORTABLE),
      fmt::format("cuMemHostAlloc of {} ({} bytes)", shortByteSizeText(bytes), bytes)));
  return ptr;
}

void CudaDevice::freePinned(void *ptr) {
  if (!ptr || !makeCurrent())
    return;
  (void)driver_.api.memFreeHost(ptr);
}

Expected<Stream> CudaDevice::createStream() {
  KILN_TRY_VOID(makeCurrent());
  CUstream stream = nullptr;
  // Non-blocking: kiln's streams do not serialize with the legacy default stream.
  KILN_TRY_VOID(driver_.check(driver_.api.streamCreate(&stream, CU_STREAM_NON_BLOCKING),
                              "cuStreamCreate"));
  return Stream{stream};
}

void CudaDevice::destroyStream(Stream stream) {
  if (!stream.handle || !makeCurrent())
    return;
  (void)driver_.api.streamDestroy(toCu(stream));
  std::lock_guard lock(lastKernelMutex_);
  lastKernelOnStream_.erase(stream.handle);
}

void CudaDevice::noteLaunch(Stream stream, const std::string &kernel) {
  std::lock_guard lock(lastKernelMutex_);
  std::string &last = lastKernelOnStream_[stream.handle];
  if (last != kernel)
    last = kernel;
}

Error CudaDevice::withLastKernel(Error error, Stream stream) const {
  std::lock_guard lock(lastKernelMutex_);
  auto found = lastKernelOnStream_.find(stream.handle);
  if (found != lastKernelOnStream_.end())
    error.withNote(fmt::format("the last kernel launched on this stream was '{}'", found->second));
  return error;
}

Expected<void> CudaDevice::synchronize(Stream stream) {
  KILN_TRY_VOID(makeCurrent());
  Expected<void> done = driver_.check(driver_.api.streamSynchronize(toCu(stream)),
                                      "cuStreamSynchronize");
  if (!done)
    return std::unexpected(withLastKernel(std::move(done).error(), stream));
  return {};
}

Expected<void> CudaDevice::copyToDevice(DevicePtr dst, const void *src, int64_t bytes,
                                        Stream stream) {
  KILN_TRY_VOID(checkSize(bytes, "cuMemcpyHtoDAsync"));
  if (bytes == 0)
    return {};
  KILN_TRY_VOID(makeCurrent());
  return driver_.check(driver_.api.memcpyHtoDAsync(static_cast<CUdeviceptr>(dst), src,
                                                   static_cast<size_t>(bytes), toCu(stream)),
                       fmt::format("cuMemcpyHtoDAsync of {} bytes", bytes));
}

Expected<void> CudaDevice::copyToHost(void *dst, DevicePtr src, int64_t bytes, Stream stream) {
  KILN_TRY_VOID(checkSize(bytes, "cuMemcpyDtoHAsync"));
  if (bytes == 0)
    return {};
  KILN_TRY_VOID(makeCurrent());
  return driver_.check(driver_.api.memcpyDtoHAsync(dst, static_cast<CUdeviceptr>(src),
                                                   static_cast<size_t>(bytes), toCu(stream)),
                       fmt::format("cuMemcpyDtoHAsync of {} bytes", bytes));
}

Expected<void> CudaDevice::copyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes,
                                        Stream stream) {
  KILN_TRY_VOID(checkSize(bytes, "cuMemcpyDtoDAsync"));
  if (bytes == 0)
    return {};
  KILN_TRY_VOID(makeCurrent());
  return driver_.check(driver_.api.memcpyDtoDAsync(static_cast<CUdeviceptr>(dst),
                                                   static_cast<CUdeviceptr>(src),
                                                   static_cast<size_t>(bytes), toCu(stream)),
                       fmt::format("cuMemcpyDtoDAsync of {} bytes", bytes));
}

Expected<void> CudaDevice::fill(DevicePtr dst, uint8_t value, int64_t bytes, Stream stream) {
  KILN_TRY_VOID(checkSize(bytes, "cuMemsetD8Async"));
  if (bytes == 0)
    return {};
  KILN_TRY_VOID(makeCurrent());
  return driver_.check(driver_.api.memsetD8Async(static_cast<CUdeviceptr>(dst), value,
                                                 static_cast<size_t>(bytes), toCu(stream)),
                       fmt::format("cuMemsetD8Async of {} bytes", bytes));
}

Expected<Event> CudaDevice::createEvent() {
  KILN_TRY_VOID(makeCurrent());
  CUevent event = nullptr;
  // With timing (the Device interface times with the same events it orders with).
  KILN_TRY_VOID(driver_.check(driver_.api.eventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate"));
  return Event{event};
}

void CudaDevice::destroyEvent(Event event) {
  if (!event.handle || !makeCurrent())
    return;
  (void)driver_.api.eventDestroy(toCu(event));
}

Expected<void> CudaDevice::record(Event event, Stream stream) {
  KILN_TRY_VOID(makeCurrent());
  return driver_.check(driver_.api.eventRecord(toCu(event), toCu(stream)), "cuEventRecord");
}

Expected<void> CudaDevice::waitEvent(Stream stream, Event event) {
  KILN_TRY_VOID(makeCurrent());
  return driver_.check(driver_.api.streamWaitEvent(toCu(stream), toCu(event), CU_EVENT_WAIT_DEFAULT),
                       "cuStreamWaitEvent");
}

Expected<bool> CudaDevice::eventDone(Event event) {
  KILN_TRY_VOID(makeCurrent());
  CUresult result = driver_.api.eventQuery(toCu(event));
  if (result == CUDA_ERROR_NOT_READY)
    return false;
  KILN_TRY_VOID(driver_.check(result, "cuEventQuery"));
  return true;
}

Expected<double> CudaDevice::elapsedMs(Event start, Event end) {
  KILN_TRY_VOID(makeCurrent());
  float ms = 0;
  KILN_TRY_VOID(driver_.check(driver_.api.eventElapsedTime(&ms, toCu(start), toCu(end)),
                              "cuEventElapsedTime"));
  return static_cast<double>(ms);
}

Expected<void> CudaDevice::beginCapture(Stream stream) {
  if (!stream.handle)
    return makeError(ErrorCode::Unsupported,
                     "cuStreamBeginCapture: the default stream cannot be captured; capture on a "
                     "stream from createStream()");
  KILN_TRY_VOID(makeCurrent());
  return driver_.check(
      driver_.api.streamBeginCapture(toCu(stream), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
      "cuStreamBeginCapture");
}

Expected<GraphExec> CudaDevice::endCapture(Stream stream) {
  KILN_TRY_VOID(makeCurrent());
  CUgraph graph = nullptr;
  KILN_TRY_VOID(driver_.check(driver_.api.streamEndCapture(toCu(stream), &graph),
                              "cuStreamEndCapture"));
  CUgraphExec exec = nullptr;
  Expected<void> instantiated = driver_.check(
      driver_.api.graphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  (void)driver_.api.graphDestroy(graph);
  KILN_TRY_VOID(std::move(instantiated));
  return GraphExec{exec};
}

Expected<void> CudaDevice::launchGraph(GraphExec graph, Stream stream) {
  KILN_TRY_VOID(makeCurrent());
  return driver_.check(driver_.api.graphLaunch(toCu(graph), toCu(stream)), "cuGraphLaunch");
}

void CudaDevice::destroyGraph(GraphExec graph) {
  if (!graph.handle || !makeCurrent())
    return;
  (void)driver_.api.graphExecDestroy(toCu(graph));
}

} // namespace kiln::runtime::cuda
