// Finding and loading libkiln_mpi.so, and checking that it was built with this kiln.
#include "runtime/dist/MpiPlugin.h"

#include "support/SharedLibrary.h"
#include "support/Version.h"

#include <dlfcn.h> // dladdr
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

namespace kiln::runtime::dist {
namespace {

using EntryFunction = const MpiPluginEntry *(*)();

/// The directory of the library that holds this function: libkiln_rt's.
std::filesystem::path runtimeLibraryDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void *>(&mpiPluginCandidates), &info) && info.dli_fname)
    return std::filesystem::path(info.dli_fname).parent_path();
  return {};
}

/// Opens one candidate and resolves its entry. RTLD_GLOBAL: Open MPI dlopens its own
/// components, which expect libmpi's symbols to be global.
Expected<const MpiPluginEntry *> openCandidate(const std::string &path) {
  KILN_TRY(void *library, openSharedLibrary(path, /*global=*/true));
  auto entry = reinterpret_cast<EntryFunction>(findSymbol(library, kMpiPluginEntrySymbol));
  if (!entry)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("{} is not kiln's MPI plugin: it lacks {}", path,
                                 kMpiPluginEntrySymbol));
  const MpiPluginEntry *plugin = entry();
  if (!plugin || !plugin->kilnVersion || !plugin->openWorld)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("{} is not kiln's MPI plugin: its entry is empty", path));
  if (std::string_view(plugin->kilnVersion) != kilnVersion())
    return makeError(ErrorCode::Unavailable,
                     fmt::format("{} was built with kiln {}, not this kiln {}", path,
                                 plugin->kilnVersion, kilnVersion()));
  return plugin;
}

Expected<const MpiPluginEntry *> loadPlugin(const std::vector<std::string> &candidates,
                                            bool forced) {
  static constexpr LibraryDescription kPlugin{
      "MPI", kMpiPluginFileName, "KILN_MPI_PLUGIN",
      "kiln's MPI plugin is built where CMake finds MPI and needs that MPI's libmpi at run "
      "time; a single process needs neither",
      "openmpi-bin and libopenmpi-dev (scripts/setup.sh installs them) and rebuild kiln"};
  return openFirstUsable<const MpiPluginEntry *>(kPlugin, candidates, forced, openCandidate);
}

} // namespace

std::vector<std::string> mpiPluginCandidates() {
  if (const char *forced = std::getenv("KILN_MPI_PLUGIN"); forced && *forced)
    return {forced};
  std::vector<std::string> candidates;
  auto add = [&](const std::filesystem::path &directory) {
    if (directory.empty())
      return;
    std::string path = (directory / kMpiPluginFileName).string();
    if (std::find(candidates.begin(), candidates.end(), path) == candidates.end())
      candidates.push_back(std::move(path));
  };
  add(runtimeLibraryDirectory());
  std::error_code ignored;
  add(std::filesystem::read_symlink("/proc/self/exe", ignored).parent_path());
  candidates.push_back(kMpiPluginFileName);
  return candidates;
}

Expected<std::unique_ptr<Communicator>> openMpiCommunicator(const CommunicatorOptions &options) {
  KILN_TRY(std::chrono::milliseconds timeout, resolveTimeout(options));
  // Loaded once per value of $KILN_MPI_PLUGIN (tests change it); never unloaded,
  // as libmpi cannot be.
  static std::mutex mutex;
  static std::map<std::string, Expected<const MpiPluginEntry *>> loaded;
  const char *forced = std::getenv("KILN_MPI_PLUGIN");
  std::string key = forced ? forced : "";
  const MpiPluginEntry *plugin = nullptr;
  {
    std::lock_guard lock(mutex);
    auto found = loaded.find(key);
    if (found == loaded.end())
      found = loaded.emplace(key, loadPlugin(mpiPluginCandidates(), !key.empty())).first;
    if (!found->second)
      return std::unexpected(found->second.error());
    plugin = *found->second;
  }
  return plugin->openWorld(timeout);
}

} // namespace kiln::runtime::dist
