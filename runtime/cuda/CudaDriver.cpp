// Finding and opening libcuda, initializing it, resolving the entry table
// through cuGetProcAddress, and turning every CUresult into an Error.
#include "runtime/cuda/CudaDriver.h"

#include "support/SharedLibrary.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

namespace kiln::runtime::cuda {
namespace {

/// The toolkit's link-time stub: present wherever the toolkit is, useless at run time.
std::vector<std::string> toolkitStubPaths() {
  std::vector<std::string> paths;
  if (const char *cudaHome = std::getenv("CUDA_HOME"); cudaHome && *cudaHome)
    paths.push_back(fmt::format("{}/lib64/stubs/libcuda.so", cudaHome));
  paths.push_back("/usr/local/cuda/lib64/stubs/libcuda.so");
  return paths;
}

/// The four functions needed before the driver is known to be real and
/// initialized; everything else comes from cuGetProcAddress afterwards.
struct BootstrapApi {
  PFN_cuInit_v2000 init = nullptr;
  PFN_cuDriverGetVersion_v2020 driverGetVersion = nullptr;
  PFN_cuGetErrorName_v6000 getErrorName = nullptr;
  PFN_cuGetProcAddress_v12000 getProcAddress = nullptr;
};

/// Why one candidate library could not be used, and whether that was because it
/// is the toolkit's stub (so the search can say "only the stub was found").
struct Rejection {
  enum Kind { Missing, Stub, Unusable };
  std::string reason;
  Kind kind = Unusable;
};

std::string resultName(const BootstrapApi &api, CUresult result) {
  const char *name = nullptr;
  if (api.getErrorName && api.getErrorName(result, &name) == CUDA_SUCCESS && name)
    return name;
  return fmt::format("CUresult {}", static_cast<int>(result));
}

template <typename Fn> bool resolveExported(void *library, const char *symbol, Fn &slot) {
  slot = reinterpret_cast<Fn>(findSymbol(library, symbol));
  return slot != nullptr;
}

/// Resolves the table through cuGetProcAddress at kDriverAbiVersion, with the
/// legacy default stream (the null Stream is the device's default stream).
Expected<void> resolveTable(const BootstrapApi &boot, const std::string &path,
                            CudaDriverTable &api) {
  std::vector<std::string> missing;
  auto need = [&](const char *symbol, auto &slot) {
    void *function = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult result = boot.getProcAddress(symbol, &function, kDriverAbiVersion,
                                          CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
    if (result != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !function) {
      missing.push_back(symbol);
      return;
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(function);
  };
#define KILN_CUDA_DRIVER_RESOLVE(member, symbol, version) need(#symbol, api.member);
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_DRIVER_RESOLVE)
#undef KILN_CUDA_DRIVER_RESOLVE
  if (!missing.empty())
    return makeError(ErrorCode::Unavailable,
                     fmt::format("{} is not a usable CUDA driver: cuGetProcAddress has no {} "
                                 "for CUDA {}.{}",
                                 path, fmt::join(missing, ", "), kDriverAbiVersion / 1000,
                                 kDriverAbiVersion % 1000 / 10));
  return {};
}

/// Opens one candidate and initializes it. On failure says why, in a sentence
/// that names the library.
std::expected<std::unique_ptr<CudaDriver>, Rejection> openCandidate(const std::string &path) {
  auto opened = openSharedLibrary(path);
  if (!opened)
    return std::unexpected(Rejection{opened.error().message(), Rejection::Missing});
  void *library = *opened;
  BootstrapApi boot;
  resolveExported(library, "cuGetErrorName", boot.getErrorName);
  if (!resolveExported(library, "cuInit", boot.init) ||
      !resolveExported(library, "cuDriverGetVersion", boot.driverGetVersion) ||
      !resolveExported(library, "cuGetProcAddress_v2", boot.getProcAddress))
    return std::unexpected(Rejection{fmt::format(
        "{} is not a CUDA 12+ driver: it lacks cuInit, cuDriverGetVersion or "
        "cuGetProcAddress_v2",
        path)});

  CUresult initialized = boot.init(0);
  if (initialized == CUDA_ERROR_STUB_LIBRARY)
    return std::unexpected(Rejection{
        fmt::format("{} is the CUDA toolkit's stub library (cuInit returns "
                    "CUDA_ERROR_STUB_LIBRARY): no NVIDIA driver is installed",
                    path),
        Rejection::Stub});
  if (initialized != CUDA_SUCCESS)
    return std::unexpected(Rejection{fmt::format("cuInit failed in {}: {}", path,
                                                 resultName(boot, initialized))});

  auto driver = std::make_unique<CudaDriver>();
  driver->libraryPath = path;
  if (CUresult got = boot.driverGetVersion(&driver->version); got != CUDA_SUCCESS)
    return std::unexpected(Rejection{
        fmt::format("cuDriverGetVersion failed in {}: {}", path, resultName(boot, got))});
  if (driver->version < kDriverAbiVersion)
    return std::unexpected(Rejection{fmt::format(
        "{} is CUDA driver {}, older than {}.{}, the oldest kiln supports: update the NVIDIA "
        "driver",
        path, driver->versionText(), kDriverAbiVersion / 1000, kDriverAbiVersion % 1000 / 10)});
  if (Expected<void> resolved = resolveTable(boot, path, driver->api); !resolved)
    return std::unexpected(Rejection{resolved.error().message()});
  return driver;
}

/// Tries each candidate in order; the first that opens and initializes wins.
Expected<std::unique_ptr<CudaDriver>> loadDriver(const std::vector<std::string> &candidates,
                                                 bool forced) {
  std::vector<Rejection> rejections;
  for (const std::string &path : candidates) {
    auto opened = openCandidate(path);
    if (opened)
      return std::move(*opened);
    rejections.push_back(std::move(opened).error());
  }
  if (forced) {
    // The user named one library: its own failure is the whole story.
    Error error(ErrorCode::Unavailable,
                fmt::format("no usable CUDA driver: KILN_LIBCUDA={}: {}", candidates.front(),
                            rejections.front().reason));
    error.withNote("unset KILN_LIBCUDA to search the usual places for libcuda.so.1");
    return std::unexpected(std::move(error));
  }
  // A library that opened but failed (cuInit, version) says more than the ones
  // that were not there at all.
  for (const Rejection &rejection : rejections)
    if (rejection.kind == Rejection::Unusable)
      return makeError(ErrorCode::Unavailable, "no usable CUDA driver: " + rejection.reason);
  for (const Rejection &rejection : rejections)
    if (rejection.kind == Rejection::Stub)
      return makeError(ErrorCode::Unavailable,
                       "no usable CUDA driver: only the toolkit's stub was found: " +
                           rejection.reason);

  Error error(ErrorCode::Unavailable,
              fmt::format("no usable CUDA driver: libcuda was not found (tried {})",
                          fmt::join(candidates, ", ")));
  for (const std::string &stub : toolkitStubPaths())
    if (std::filesystem::exists(stub)) {
      error.withNote(fmt::format("only the CUDA toolkit's stub library exists ({}): the toolkit "
                                 "is installed but the NVIDIA driver is not",
                                 stub));
      break;
    }
  error.withNote("install the NVIDIA driver, or set KILN_LIBCUDA to the path of libcuda.so.1");
  return std::unexpected(std::move(error));
}

ErrorCode errorCodeFor(CUresult result) {
  switch (result) {
  case CUDA_ERROR_OUT_OF_MEMORY:
    return ErrorCode::OutOfMemory;
  case CUDA_ERROR_INVALID_PTX:
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
  case CUDA_ERROR_INVALID_IMAGE:
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
  case CUDA_ERROR_INVALID_SOURCE:
  case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
  case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
    return ErrorCode::CompileError;
  case CUDA_ERROR_NOT_FOUND:
    return ErrorCode::NotFound;
  case CUDA_ERROR_INVALID_VALUE:
  case CUDA_ERROR_INVALID_HANDLE:
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    return ErrorCode::InvalidArgument;
  case CUDA_ERROR_NOT_SUPPORTED:
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
  case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
  case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
  case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
  case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
    return ErrorCode::Unsupported;
  default:
    // No device, a driver failure, or a sticky fault (illegal address, trap):
    // the device cannot be used by this process any more.
    return ErrorCode::Unavailable;
  }
}

} // namespace

std::string CudaDriver::describeResult(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  if (api.getErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = nullptr;
  if (api.getErrorString(result, &text) != CUDA_SUCCESS || !text)
    text = nullptr;
  std::string described = name ? name : fmt::format("CUresult {}", static_cast<int>(result));
  if (text)
    described += fmt::format(" ({})", text);
  return described;
}

Expected<void> CudaDriver::check(CUresult result, std::string_view operation,
                                 std::string_view kernel) const {
  if (result == CUDA_SUCCESS)
    return {};
  std::string subject =
      kernel.empty() ? std::string(operation) : fmt::format("{} of kernel '{}'", operation, kernel);
  return makeError(errorCodeFor(result),
                   fmt::format("{} failed: {}", subject, describeResult(result)));
}

std::string CudaDriver::versionText() const {
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

std::vector<std::string> libcudaCandidates() {
  if (const char *forced = std::getenv("KILN_LIBCUDA"); forced && *forced)
    return {forced};
  // libcuda.so.1 is the driver's runtime name; the bare libcuda.so is often only
  // the toolkit's link-time stub, so it comes last.
  return {"libcuda.so.1",
          "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
          "/usr/lib64/libcuda.so.1",
          "/usr/lib/wsl/lib/libcuda.so.1",
          "libcuda.so"};
}

Expected<const CudaDriver *> cudaDriver() {
  static std::mutex mutex;
  static std::map<std::string, Expected<std::unique_ptr<CudaDriver>>> loaded;
  const char *forced = std::getenv("KILN_LIBCUDA");
  std::string key = forced ? forced : "";
  std::lock_guard lock(mutex);
  auto found = loaded.find(key);
  if (found == loaded.end()) {
    std::vector<std::string> candidates = libcudaCandidates();
    found = loaded.emplace(key, loadDriver(candidates, !key.empty())).first;
  }
  if (!found->second)
    return std::unexpected(found->second.error());
  return found->second->get();
}

} // namespace kiln::runtime::cuda
