// Loading modules (cubin, or PTX through the driver's JIT with its error log)
// and the kernels in them: lookup, parameter checks, launches that name the kernel.
#include "runtime/cuda/CudaModule.h"

#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/CudaTensorMap.h"

#include <fmt/format.h>

#include <array>
#include <mutex>
#include <vector>

namespace kiln::runtime::cuda {
namespace {

/// The dynamic shared memory a kernel may use without opting in.
constexpr uint32_t kDefaultDynamicSharedLimit = 48 * 1024;

/// The driver's JIT log buffers, passed as CUjit_options to cuModuleLoadDataEx.
class JitLogs {
public:
  static constexpr size_t kLogBytes = 64 * 1024;

  JitLogs() : errorLog_(kLogBytes, '\0'), infoLog_(kLogBytes, '\0') {
    options_ = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    // Sizes travel in the pointer-sized option values themselves.
    values_ = {errorLog_.data(), reinterpret_cast<void *>(static_cast<uintptr_t>(kLogBytes)),
               infoLog_.data(), reinterpret_cast<void *>(static_cast<uintptr_t>(kLogBytes))};
  }
  unsigned count() const { return static_cast<unsigned>(options_.size()); }
  CUjit_option *options() { return options_.data(); }
  void **values() { return values_.data(); }
  std::string errorLog() const { return trimmed(errorLog_); }

private:
  static std::string trimmed(const std::string &log) {
    std::string text(log.c_str());
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
      text.pop_back();
    return text;
  }
  std::string errorLog_, infoLog_;
  std::array<CUjit_option, 4> options_;
  std::array<void *, 4> values_;
};

/// A kernel bound to its launch dimensions; holds its module.
class CudaKernel final : public DeviceKernel {
public:
  CudaKernel(std::shared_ptr<const CudaModule> module, CUfunction function, std::string name,
             LaunchDims dims, size_t parameterCount)
      : module_(std::move(module)), function_(function), name_(std::move(name)), dims_(dims),
        parameterCount_(parameterCount), tensorMaps_(dims_.tensorMaps) {}

  const std::string &name() const override { return name_; }

  Expected<void> launch(const DevicePtr *args, Stream stream) const override {
    CudaDevice &device = module_->device();
    KILN_TRY_VOID(device.makeCurrent());
    // cuLaunchKernel reads each parameter through a pointer to its value.
    constexpr size_t kInline = 32;
    std::array<void *, kInline> inlineParams;
    std::vector<void *> heapParams;
    void **params = inlineParams.data();
    if (parameterCount_ > kInline) {
      heapParams.resize(parameterCount_);
      params = heapParams.data();
    }
    // Buffers first; then each tensor map, encoded from its buffer's address (again only
    // when the address moved; a launch graph keeps the parameter bytes it captured). The maps
    // stay locked until cuLaunchKernel has copied them.
    const size_t buffers = parameterCount_ - dims_.tensorMaps.size();
    for (size_t i = 0; i < buffers; ++i)
      params[i] = const_cast<DevicePtr *>(&args[i]);
    const CudaDriver &driver = device.driver();
    std::unique_lock<std::mutex> mapsLock(tensorMapsMutex_, std::defer_lock);
    if (!dims_.tensorMaps.empty()) {
      mapsLock.lock();
      KILN_TRY(const CUtensorMap *maps, tensorMaps_.forLaunch(driver, args, name_));
      for (size_t m = 0; m < dims_.tensorMaps.size(); ++m)
        params[buffers + m] = const_cast<CUtensorMap *>(&maps[m]);
    }
    CUresult result = driver.api.launchKernel(
        function_, dims_.grid[0], dims_.grid[1], dims_.grid[2], dims_.block[0], dims_.block[1],
        dims_.block[2], dims_.sharedBytes, static_cast<CUstream>(stream.handle), params, nullptr);
    if (result == CUDA_SUCCESS) {
      device.noteLaunch(stream, name_);
      return {};
    }
    Error error = driver
                      .check(result,
                             fmt::format("cuLaunchKernel (grid {}x{}x{}, block {}x{}x{})",
                                         dims_.grid[0], dims_.grid[1], dims_.grid[2],
                                         dims_.block[0], dims_.block[1], dims_.block[2]),
                             name_)
                      .error();
    // A sticky fault of an earlier kernel surfaces at the next launch: name that one too.
    if (error.code() == ErrorCode::Unavailable)
      error = device.withLastKernel(std::move(error), stream);
    return std::unexpected(std::move(error));
  }

private:
  std::shared_ptr<const CudaModule> module_;
  CUfunction function_;
  std::string name_;
  LaunchDims dims_;
  size_t parameterCount_;
  mutable std::mutex tensorMapsMutex_;
  mutable TensorMapCache tensorMaps_;
};

Expected<void> checkDims(const CudaDeviceProperties &properties, const std::string &kernel,
                         const LaunchDims &dims) {
  uint64_t threads = uint64_t(dims.block[0]) * dims.block[1] * dims.block[2];
  bool empty = threads == 0 || dims.grid[0] == 0 || dims.grid[1] == 0 || dims.grid[2] == 0;
  if (empty || threads > static_cast<uint64_t>(properties.maxThreadsPerBlock))
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("kernel '{}': launch grid {}x{}x{} with block {}x{}x{} is "
                                 "impossible on {} (at most {} threads per block, no zero "
                                 "dimension)",
                                 kernel, dims.grid[0], dims.grid[1], dims.grid[2], dims.block[0],
                                 dims.block[1], dims.block[2], properties.name,
                                 properties.maxThreadsPerBlock));
  if (dims.sharedBytes > properties.maxSharedBytesPerBlockOptin)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("kernel '{}': {} bytes of dynamic shared memory exceed the {} "
                                 "a block may use on {}",
                                 kernel, dims.sharedBytes, properties.maxSharedBytesPerBlockOptin,
                                 properties.name));
  return {};
}

} // namespace

Expected<std::shared_ptr<CudaModule>> CudaDevice::loadModule(const ModuleImage &image) {
  const std::string what = image.description.empty() ? "a module" : image.description;
  if (image.cubin.empty() && image.ptx.empty())
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("cannot load {}: it has neither a cubin nor PTX", what));
  KILN_TRY_VOID(makeCurrent());
  std::string cubinRejection;
  if (!image.cubin.empty()) {
    JitLogs logs;
    CUmodule module = nullptr;
    CUresult result = driver_.api.moduleLoadDataEx(&module, image.cubin.data(), logs.count(),
                                                   logs.options(), logs.values());
    if (result == CUDA_SUCCESS)
      return std::make_shared<CudaModule>(shared_from_this(), module, image.description);
    cubinRejection = driver_.describeResult(result);
    if (image.ptx.empty())
      return makeError(ErrorCode::CompileError,
                       fmt::format("the driver rejected the cubin of {} on {} ({}): {}", what,
                                   properties_.name, properties_.smName(), cubinRejection));
  }
  JitLogs logs;
  CUmodule module = nullptr;
  Expected<void> loaded = driver_.check(
      driver_.api.moduleLoadDataEx(&module, image.ptx.c_str(), logs.count(), logs.options(),
                                   logs.values()),
      fmt::format("the PTX JIT (cuModuleLoadDataEx) for {} on {}", what, properties_.smName()));
  if (!loaded) {
    Error error = std::move(loaded).error();
    if (!logs.errorLog().empty())
      error.withNote("JIT log:\n" + logs.errorLog());
    if (!cubinRejection.empty())
      error.withNote("the cubin was rejected first: " + cubinRejection);
    return std::unexpected(std::move(error));
  }
  return std::make_shared<CudaModule>(shared_from_this(), module, image.description);
}

CudaModule::CudaModule(std::shared_ptr<CudaDevice> device, CUmod_st *module,
                       std::string description)
    : device_(std::move(device)), module_(module), description_(std::move(description)) {}

CudaModule::~CudaModule() {
  if (device_->makeCurrent())
    (void)device_->driver().api.moduleUnload(module_);
}

Expected<std::shared_ptr<const DeviceKernel>> CudaModule::kernel(const std::string &name,
                                                                 LaunchDims dims) const {
  const CudaDriver &driver = device_->driver();
  KILN_TRY_VOID(device_->makeCurrent());
  CUfunction function = nullptr;
  CUresult found = driver.api.moduleGetFunction(&function, module_, name.c_str());
  if (found == CUDA_ERROR_NOT_FOUND)
    return makeError(ErrorCode::NotFound,
                     fmt::format("kernel '{}' is not in {}", name,
                                 description_.empty() ? "the module" : description_));
  KILN_TRY_VOID(driver.check(found, "cuModuleGetFunction", name));
  KILN_TRY_VOID(checkDims(device_->properties(), name, dims));

  // Count the parameters (the driver reads that many at launch) and insist on kiln's calling
  // convention: device pointers, then the launch's tensor maps of 128 bytes each.
  std::vector<size_t> sizes;
  for (;;) {
    size_t offset = 0, size = 0;
    CUresult info = driver.api.funcGetParamInfo(function, sizes.size(), &offset, &size);
    if (info == CUDA_ERROR_INVALID_VALUE)
      break;
    KILN_TRY_VOID(driver.check(info, "cuFuncGetParamInfo", name));
    sizes.push_back(size);
  }
  const size_t parameterCount = sizes.size();
  if (parameterCount < dims.tensorMaps.size())
    return makeError(ErrorCode::Unsupported,
                     fmt::format("kernel '{}' has {} parameters, fewer than its {} tensor maps",
                                 name, parameterCount, dims.tensorMaps.size()));
  const size_t buffers = parameterCount - dims.tensorMaps.size();
  for (size_t i = 0; i < parameterCount; ++i) {
    const size_t expected = i < buffers ? sizeof(DevicePtr) : sizeof(CUtensorMap);
    if (sizes[i] != expected)
      return makeError(ErrorCode::Unsupported,
                       fmt::format("kernel '{}': parameter {} is {} bytes; kiln's calling "
                                   "convention passes {} device pointers then {} tensor maps "
                                   "of {} bytes",
                                   name, i, sizes[i], buffers, dims.tensorMaps.size(),
                                   sizeof(CUtensorMap)));
  }
  for (const TensorMapArg &map : dims.tensorMaps)
    if (map.param < 0 || static_cast<size_t>(map.param) >= buffers)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("kernel '{}': a tensor map of parameter {}, which is not one "
                                   "of its {} buffers",
                                   name, map.param, buffers));
  if (dims.sharedBytes > kDefaultDynamicSharedLimit)
    KILN_TRY_VOID(driver.check(
        driver.api.funcSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(dims.sharedBytes)),
        "cuFuncSetAttribute(max dynamic shared size)", name));
  return std::make_shared<CudaKernel>(shared_from_this(), function, name, dims, parameterCount);
}

} // namespace kiln::runtime::cuda
