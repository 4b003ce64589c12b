// Finding and opening libnccl.so.2, resolving the entry points kiln uses, and
// turning every ncclResult_t into an Error.
#include "runtime/dist/NcclApi.h"

#include "runtime/dist/Communicator.h"
#include "support/SharedLibrary.h"

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>

namespace kiln::runtime::dist {
namespace {

Expected<std::unique_ptr<NcclLibrary>> openCandidate(const std::string &path) {
  KILN_TRY(void *handle, openSharedLibrary(path));
  auto api = std::make_unique<NcclApi>();
  std::vector<std::string> missing;
#define KILN_NCCL_RESOLVE(name) resolveSymbol(handle, #name, api->name, missing);
  KILN_NCCL_FUNCTIONS(KILN_NCCL_RESOLVE)
  // Older NCCLs lack these; start-up then blocks (docs/distributed.md, "Faults").
  std::vector<std::string> optionalMissing;
#define KILN_NCCL_RESOLVE_OPTIONAL(name) resolveSymbol(handle, #name, api->name, optionalMissing);
  KILN_NCCL_OPTIONAL_FUNCTIONS(KILN_NCCL_RESOLVE_OPTIONAL)
#undef KILN_NCCL_RESOLVE_OPTIONAL
#undef KILN_NCCL_RESOLVE
  if (!missing.empty())
    return makeError(ErrorCode::Unavailable, fmt::format("{} is not a usable NCCL 2: it lacks {}",
                                                         path, fmt::join(missing, ", ")));
  auto library = std::make_unique<NcclLibrary>();
  library->libraryPath = path;
  if (api->ncclGetVersion(&library->version) != ncclSuccess)
    return makeError(ErrorCode::Unavailable, fmt::format("ncclGetVersion failed in {}", path));
  library->api = std::move(api);
  // ncclAvg (the mean) and ncclBfloat16 came with 2.10.
  if (library->version < 21000)
    return makeError(ErrorCode::Unavailable, fmt::format("{} is NCCL {}; kiln needs 2.10 or newer",
                                                         path, library->versionText()));
  return library;
}

Expected<std::unique_ptr<NcclLibrary>> loadLibrary(const std::vector<std::string> &candidates,
                                                   bool forced) {
  static constexpr LibraryDescription kNccl{
      "NCCL", "libnccl.so.2", "KILN_LIBNCCL",
      "NCCL is needed for collectives on GPU buffers only; MPI reduces host buffers",
      "NCCL 2 (the CUDA toolkit's libnccl)"};
  return openFirstUsable<std::unique_ptr<NcclLibrary>>(kNccl, candidates, forced, openCandidate);
}

ErrorCode errorCodeFor(ncclResult_t result) {
  switch (result) {
  case ncclInvalidArgument:
  case ncclInvalidUsage:
    return ErrorCode::InvalidArgument;
  default:
    // System, CUDA, internal and remote failures: the group cannot go on.
    return ErrorCode::Unavailable;
  }
}

} // namespace

NcclLibrary::NcclLibrary() = default;
NcclLibrary::~NcclLibrary() = default;
NcclLibrary::NcclLibrary(NcclLibrary &&) noexcept = default;
NcclLibrary &NcclLibrary::operator=(NcclLibrary &&) noexcept = default;

std::string NcclLibrary::versionText() const {
  // NCCL_VERSION(X, Y, Z) is X * 10000 + Y * 100 + Z from 2.9 on.
  return fmt::format("{}.{}.{}", version / 10000, version % 10000 / 100, version % 100);
}

std::vector<std::string> libncclCandidates() {
  if (const char *forced = std::getenv("KILN_LIBNCCL"); forced && *forced)
    return {forced};
  std::vector<std::string> candidates{"libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2"};
  if (const char *cudaHome = std::getenv("CUDA_HOME"); cudaHome && *cudaHome) {
    std::string path = fmt::format("{}/lib64/libnccl.so.2", cudaHome);
    if (path != candidates.back())
      candidates.push_back(std::move(path));
  }
  return candidates;
}

Expected<const NcclLibrary *> ncclLibrary() {
  static std::mutex mutex;
  static std::map<std::string, Expected<std::unique_ptr<NcclLibrary>>> loaded;
  const char *forced = std::getenv("KILN_LIBNCCL");
  std::string key = forced ? forced : "";
  std::lock_guard lock(mutex);
  auto found = loaded.find(key);
  if (found == loaded.end())
    found = loaded.emplace(key, loadLibrary(libncclCandidates(), !key.empty())).first;
  if (!found->second)
    return std::unexpected(found->second.error());
  return found->second->get();
}

Expected<void> checkNccl(const NcclLibrary &library, ncclResult_t result, std::string_view call,
                         std::string_view collective, const Communicator &communicator,
                         ncclComm_t comm) {
  if (result == ncclSuccess)
    return {};
  const char *name = library.api->ncclGetErrorString(result);
  std::string message = fmt::format("{} failed in {} on {}: {}", call, collective,
                                    describeRank(communicator),
                                    name ? name : fmt::format("ncclResult_t {}", static_cast<int>(result)));
  // NCCL keeps a text on the most recent failure: usually its reason.
  if (const char *detail = library.api->ncclGetLastError(comm); detail && *detail)
    message += fmt::format(" ({})", detail);
  return makeError(errorCodeFor(result), std::move(message));
}

} // namespace kiln::runtime::dist
