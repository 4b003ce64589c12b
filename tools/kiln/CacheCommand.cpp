// kiln cache ls|stats|clear: the kernel cache on disk, as users see it.
#include "runtime/cache/CacheDirectory.h"
#include "tools/kiln/Commands.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace kiln::tool {

namespace {

namespace fs = std::filesystem;

constexpr const char *kCacheHelp = R"(usage: kiln cache <ls|stats|clear> [options]

The kernel cache keeps compiled GPU modules (PTX and cubin) so a model that
was compiled before starts without running LLVM, NVRTC or ptxas again.

  ls      list the entries: name, size, age and what they hold (architecture,
          backend, kernels); an entry that fails its checks says why
  stats   totals: entries, bytes, entries that fail their checks, temporary
          files left by interrupted writes
  clear   remove every entry and temporary file of the kernel cache (and
          nothing else in the directory)

options:
  --dir DIR   the cache directory (default: $KILN_CACHE_DIR, else
              $XDG_CACHE_HOME/kiln, else ~/.cache/kiln)
  --help      print this help and exit

KILN_CACHE=off (or 0) turns the disk cache off; see docs/caching.md.
)";

std::string formatSize(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20))
    return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= 1024)
    return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  return fmt::format("{} B", bytes);
}

std::string formatAge(std::chrono::system_clock::time_point when) {
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now() - when)
                     .count();
  seconds = std::max<int64_t>(seconds, 0);
  if (seconds < 120)
    return fmt::format("{}s", seconds);
  if (seconds < 2 * 3600)
    return fmt::format("{}m", seconds / 60);
  if (seconds < 2 * 86400)
    return fmt::format("{}h", seconds / 3600);
  return fmt::format("{}d", seconds / 86400);
}

/// The first line of a key is its summary ("sm_90a llvm 2 kernels: k0 k1").
std::string keySummary(const std::string &key) { return key.substr(0, key.find('\n')); }

int countTemporaries(const fs::path &root) {
  int count = 0;
  std::error_code error;
  for (fs::directory_iterator it(runtime::kernelEntryDirectory(root), error), end;
       !error && it != end; it.increment(error))
    count += runtime::isTemporaryFileName(it->path().filename().string());
  return count;
}

int listEntries(const fs::path &root) {
  auto entries = runtime::listCacheEntries(root);
  if (!entries)
    return reportError("cache", entries.error());
  for (const runtime::CacheFileInfo &entry : *entries)
    fmt::print("{}  {:>10}  {:>4}  {}\n", entry.path.filename().string().substr(0, 16),
               formatSize(entry.bytes), formatAge(entry.modified),
               entry.problem.empty() ? keySummary(entry.key)
                                     : fmt::format("INVALID: {}", entry.problem));
  fmt::print("{} entr{} in {}\n", entries->size(), entries->size() == 1 ? "y" : "ies",
             runtime::kernelEntryDirectory(root).string());
  return kExitOk;
}

int printStats(const fs::path &root, const std::string &source) {
  auto entries = runtime::listCacheEntries(root);
  if (!entries)
    return reportError("cache", entries.error());
  int64_t bytes = 0;
  int invalid = 0;
  std::optional<std::chrono::system_clock::time_point> oldest, newest;
  for (const runtime::CacheFileInfo &entry : *entries) {
    bytes += entry.bytes;
    invalid += !entry.problem.empty();
    if (!oldest || entry.modified < *oldest)
      oldest = entry.modified;
    if (!newest || entry.modified > *newest)
      newest = entry.modified;
  }
  fmt::print("directory:   {} ({})\n", runtime::kernelEntryDirectory(root).string(), source);
  fmt::print("entries:     {} ({})\n", entries->size(), formatSize(bytes));
  fmt::print("invalid:     {} (rebuilt when next needed)\n", invalid);
  fmt::print("temporaries: {}\n", countTemporaries(root));
  if (oldest)
    fmt::print("ages:        newest {}, oldest {}\n", formatAge(*newest), formatAge(*oldest));
  return kExitOk;
}

int clearEntries(const fs::path &root) {
  auto cleared = runtime::clearCache(root);
  if (!cleared)
    return reportError("cache", cleared.error());
  fmt::print("removed {} entr{} ({}) and {} temporary file{} from {}\n", cleared->entries,
             cleared->entries == 1 ? "y" : "ies", formatSize(cleared->bytes),
             cleared->temporaries, cleared->temporaries == 1 ? "" : "s",
             runtime::kernelEntryDirectory(root).string());
  return kExitOk;
}

} // namespace

int cacheCommand(const std::vector<std::string> &words) {
  auto args = parseCommandArgs("cache", words, {"--dir"}, {"--help"});
  if (!args)
    return kExitUsage;
  if (args->has("--help")) {
    fmt::print(kCacheHelp);
    return kExitOk;
  }
  const std::vector<std::string> &positional = args->positional();
  if (positional.size() != 1 ||
      (positional[0] != "ls" && positional[0] != "stats" && positional[0] != "clear"))
    return usageErrorWithHelp("cache", "expected one of ls, stats, clear");
  runtime::CacheLocation location = runtime::cacheLocationFromEnvironment();
  if (auto dir = args->value("--dir"))
    location = {fs::path(*dir), "--dir"};
  if (!location.root) {
    fmt::print("kernel cache: {}\n", location.source);
    return kExitOk;
  }
  const std::string &action = positional[0];
  if (action == "ls")
    return listEntries(*location.root);
  if (action == "stats")
    return printStats(*location.root, location.source);
  return clearEntries(*location.root);
}

} // namespace kiln::tool
