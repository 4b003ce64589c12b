// Where the kernel cache lives on disk and what its files are called: the
// location from the environment, listing, clearing and stale-file cleanup.
#pragma once

#include "runtime/cache/ContentHash.h"
#include "support/Error.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

/// The disk tier's root as the environment picks it.
struct CacheLocation {
  /// Nullopt when the disk tier is off ($KILN_CACHE=off or 0, or no directory found).
  std::optional<std::filesystem::path> root;
  /// Why this root: "$KILN_CACHE_DIR", "$XDG_CACHE_HOME/kiln", "~/.cache/kiln",
  /// "disabled by KILN_CACHE=off", ...
  std::string source;
};

/// $KILN_CACHE=off|0|false|no disables the disk tier; else $KILN_CACHE_DIR, else
/// $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln (the password database's home
/// when $HOME is unset).
CacheLocation cacheLocationFromEnvironment();

/// Kernel entries live in <root>/kernels, so other caches can share the root
/// and `kiln cache clear` touches only kiln's kernel files.
std::filesystem::path kernelEntryDirectory(const std::filesystem::path &root);

/// "<32 hex digits>.kce": the file of the entry whose key hashes to `keyHash`.
std::string entryFileName(const Hash128 &keyHash);
/// A temporary name next to the entry, unique to this process and call.
std::string temporaryFileName(const Hash128 &keyHash);
/// Whether `name` is an entry file / a temporary file of an entry being written.
bool isEntryFileName(std::string_view name);
bool isTemporaryFileName(std::string_view name);

/// Creates `directory` and its parents. The error names the cause a plain
/// mkdir hides: a dangling symbolic link on the way reads as "File exists".
Expected<void> createCacheDirectory(const std::filesystem::path &directory);

/// One file of the cache, as `kiln cache ls` shows it.
struct CacheFileInfo {
  std::filesystem::path path;
  int64_t bytes = 0;
  std::chrono::system_clock::time_point modified;
  std::string key;     ///< the stored key when the entry is valid
  std::string problem; ///< why the entry cannot be trusted, or empty
};

/// Every entry file under `root`, sorted by name, each checked. A missing
/// directory is an empty list; an unreadable one an IOError naming it.
Expected<std::vector<CacheFileInfo>> listCacheEntries(const std::filesystem::path &root);

/// What clearCache removed.
struct ClearResult {
  int entries = 0, temporaries = 0;
  int64_t bytes = 0;
};

/// Removes kiln's entry and temporary files under `root` (and nothing else),
/// each with one unlink, so a concurrent reader sees a whole entry or none.
Expected<ClearResult> clearCache(const std::filesystem::path &root);

/// What evictToFit removed.
struct EvictResult {
  int entries = 0;
  int64_t bytes = 0;
};

/// When the entry files in `directory` hold more than `maxBytes` in all,
/// removes the least recently used ones (oldest modification time: a disk
/// hit refreshes it) until they hold at most 3/4 of `maxBytes`, never
/// `keep` (the entry just written). One unlink per entry, so a concurrent
/// reader sees a whole entry or a miss. Errors are ignored: housekeeping.
EvictResult evictToFit(const std::filesystem::path &directory, int64_t maxBytes,
                       const std::filesystem::path &keep);

/// The disk tier's size bound: $KILN_CACHE_MAX_MB (megabytes) when it is a
/// positive integer, else kDefaultCacheMaxBytes.
int64_t cacheMaxBytesFromEnvironment();
inline constexpr int64_t kDefaultCacheMaxBytes = int64_t{4} << 30;

/// Removes temporary files in `directory` older than `age` (left by a process
/// that crashed while writing); returns how many. Errors are ignored: this is
/// housekeeping.
int removeStaleTemporaries(const std::filesystem::path &directory, std::chrono::seconds age);

} // namespace kiln::runtime
