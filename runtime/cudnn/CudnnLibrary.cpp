// Finding and opening libcudnn.so.9, resolving the entry points kiln uses, and
// turning every cudnnStatus_t into an Error.
#include "runtime/cudnn/CudnnApi.h"

#include "support/SharedLibrary.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <glob.h>
#include <map>
#include <mutex>

namespace kiln::runtime::cudnn {
namespace {

constexpr const char *kOptionalNote =
    "cuDNN is optional: kiln's own kernels run without it; it is only a tuning candidate for "
    "conv2d";

/// cuDNN 9's versions are major * 10000 + minor * 100 + patch.
constexpr size_t kMajorScale = 10000;

/// Opens one candidate: the library, every entry point, and a version check.
Expected<std::unique_ptr<CudnnLibrary>> openCandidate(const std::string &path) {
  KILN_TRY(void *handle, openSharedLibrary(path));
  auto api = std::make_unique<CudnnApi>();
  std::vector<std::string> missing;
#define KILN_CUDNN_RESOLVE(name) resolveSymbol(handle, #name, api->name, missing);
  KILN_CUDNN_FUNCTIONS(KILN_CUDNN_RESOLVE)
#undef KILN_CUDNN_RESOLVE
  if (!missing.empty())
    // Not dlclose'd: a half-initialized cuDNN may have started threads of its own.
    return makeError(ErrorCode::Unavailable, fmt::format("{} is not a usable cuDNN 9: it lacks {}",
                                                         path, fmt::join(missing, ", ")));
  auto library = std::make_unique<CudnnLibrary>();
  library->libraryPath = path;
  library->version = api->cudnnGetVersion();
  library->api = std::move(api);
  if (library->version / kMajorScale != 9)
    return makeError(ErrorCode::Unavailable, fmt::format("{} is cuDNN {}; kiln uses cuDNN 9", path,
                                                         library->versionText()));
  return library;
}

Expected<std::unique_ptr<CudnnLibrary>> loadLibrary(const std::vector<std::string> &candidates,
                                                    bool forced) {
  static constexpr LibraryDescription kCudnn{"cuDNN", "libcudnn.so.9", "KILN_CUDNN",
                                             kOptionalNote, "cuDNN 9"};
  return openFirstUsable<std::unique_ptr<CudnnLibrary>>(kCudnn, candidates, forced,
                                                        openCandidate);
}

ErrorCode errorCodeFor(cudnnStatus_t status) {
  switch (status) {
  case CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED:
  case CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED:
    return ErrorCode::OutOfMemory;
  default:
    break;
  }
  switch (CUDNN_STATUS_CATEGORY(static_cast<int>(status))) {
  case CUDNN_STATUS_BAD_PARAM:
    return ErrorCode::InvalidArgument;
  case CUDNN_STATUS_NOT_SUPPORTED:
    return ErrorCode::Unsupported;
  default:
    // Not initialized (no GPU, no driver), internal and execution failures.
    return ErrorCode::Unavailable;
  }
}

} // namespace

CudnnLibrary::CudnnLibrary() = default;
CudnnLibrary::~CudnnLibrary() = default;
CudnnLibrary::CudnnLibrary(CudnnLibrary &&) noexcept = default;
CudnnLibrary &CudnnLibrary::operator=(CudnnLibrary &&) noexcept = default;

std::string CudnnLibrary::versionText() const {
  return fmt::format("{}.{}.{}", version / kMajorScale, version % kMajorScale / 100, version % 100);
}

std::vector<std::string> libcudnnCandidates() {
  if (const char *forced = std::getenv("KILN_CUDNN"); forced && *forced) {
    // An explicit choice is the only one tried: falling back would hide a wrong path.
    std::error_code error;
    if (std::filesystem::is_directory(forced, error))
      return {(std::filesystem::path(forced) / "libcudnn.so.9").string()};
    return {forced};
  }
  std::vector<std::string> candidates{"libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9"};
  if (const char *cudaHome = std::getenv("CUDA_HOME"); cudaHome && *cudaHome) {
    std::string path = fmt::format("{}/lib64/libcudnn.so.9", cudaHome);
    if (path != candidates.back())
      candidates.push_back(std::move(path));
  }
  // Last, the nvidia-cudnn wheel PyTorch installs: <prefix>/lib/python3*/{site,dist}-packages/
  // nvidia/cudnn/lib, the active environment's prefixes first.
  std::vector<std::string> prefixes;
  for (const char *variable : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char *prefix = std::getenv(variable); prefix && *prefix)
      prefixes.push_back(prefix);
  prefixes.insert(prefixes.end(), {"/opt/*/.venv", "/opt/*", "/usr/local", "/usr"});
  if (const char *home = std::getenv("HOME"); home && *home)
    prefixes.push_back(fmt::format("{}/.local", home));
  for (const std::string &prefix : prefixes)
    for (const char *packages : {"site-packages", "dist-packages"}) {
      std::string pattern =
          fmt::format("{}/lib/python3*/{}/nvidia/cudnn/lib/libcudnn.so.9", prefix, packages);
      glob_t found{};
      if (glob(pattern.c_str(), 0, nullptr, &found) == 0)
        for (size_t i = 0; i < found.gl_pathc; ++i)
          candidates.push_back(found.gl_pathv[i]);
      globfree(&found);
    }
  return candidates;
}

Expected<const CudnnLibrary *> cudnnLibrary() {
  static std::mutex mutex;
  static std::map<std::string, Expected<std::unique_ptr<CudnnLibrary>>> loaded;
  const char *forced = std::getenv("KILN_CUDNN");
  std::string key = forced ? forced : "";
  std::lock_guard lock(mutex);
  auto found = loaded.find(key);
  if (found == loaded.end())
    found = loaded.emplace(key, loadLibrary(libcudnnCandidates(), !key.empty())).first;
  if (!found->second)
    return std::unexpected(found->second.error());
  return found->second->get();
}

std::string cudnnVersionText() {
  auto library = cudnnLibrary();
  return library ? (*library)->versionText() : "unavailable";
}

Expected<void> checkCudnn(const CudnnLibrary &library, cudnnStatus_t status,
                          std::string_view operation) {
  if (status == CUDNN_STATUS_SUCCESS)
    return {};
  const char *name = library.api->cudnnGetErrorString(status);
  std::string message =
      fmt::format("{} failed: {}", operation,
                  name ? name : fmt::format("cudnnStatus_t {}", static_cast<int>(status)));
  // cuDNN 9 keeps a per-thread text on the most recent failure: its reason.
  char detail[512] = {};
  library.api->cudnnGetLastErrorString(detail, sizeof(detail));
  if (detail[0] != '\0')
    message += fmt::format(" ({})", detail);
  return makeError(errorCodeFor(status), std::move(message));
}

} // namespace kiln::runtime::cudnn
