// The kernel cache: compiled GPU modules by key, in a bounded in-memory LRU
// tier in front of a content-addressed directory on disk (docs/caching.md).
#pragma once

#include "runtime/cache/CacheDirectory.h"
#include "runtime/cache/CacheEntryFile.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kiln::runtime {

/// Which tier answered a lookup.
enum class CacheTier { Memory, Disk };

/// Counters since the cache was made, for reports and `kiln cache stats`.
struct KernelCacheStats {
  int64_t memoryHits = 0, diskHits = 0, misses = 0;
  int64_t writes = 0;        ///< entries written to disk
  int64_t writeFailures = 0; ///< stores whose disk write failed (the compile went on)
  int64_t rejected = 0;      ///< disk entries found corrupt, truncated, foreign or of another version
  int64_t evicted = 0;       ///< disk entries removed to keep the directory under its bound
  int64_t memoryBytes = 0;   ///< payload bytes held in the memory tier now
  int64_t memoryEntries = 0;
  int64_t bytesRead = 0, bytesWritten = 0; ///< disk traffic
  /// Every warning reported so far (the most recent kMaxWarnings).
  std::vector<std::string> warnings;
};

struct KernelCacheOptions {
  /// The disk tier's root (entries go in <root>/kernels); nullopt keeps memory only.
  std::optional<std::filesystem::path> root;
  /// The memory tier's bound on payload bytes; least recently used entries go first.
  int64_t memoryCapacityBytes = int64_t{64} << 20;
  /// The disk tier's bound on entry bytes: after a write that passes it, the
  /// least recently used entries are removed down to 3/4 of it (evictToFit).
  int64_t diskCapacityBytes = kDefaultCacheMaxBytes;
};

/// What a lookup found. Warnings say what was rejected on the way (each one
/// also lands in the statistics); the caller shows them to the user.
struct CacheLookup {
  std::optional<CacheEntry> entry; ///< nullopt: a miss
  CacheTier tier = CacheTier::Memory;
  std::vector<std::string> warnings;
};

/// What a store did: the memory tier always takes the entry; the disk tier may fail.
struct CacheStore {
  bool writtenToDisk = false;
  std::vector<std::string> warnings;
};

/// A two-tier cache of byte payloads by key. The disk tier never trusts a file:
/// an entry is used only when its magic, version, checksum and full key match,
/// and anything else is reported and left to be rebuilt. Writes go to a
/// temporary file, are fsynced and renamed into place, so readers in any
/// process see a whole entry or none, and concurrent writers of one key both
/// succeed. Safe to use from several threads.
class KernelCache {
public:
  explicit KernelCache(KernelCacheOptions options);

  /// The entry for `key`: memory first, then disk (a disk hit is kept in memory).
  CacheLookup lookup(std::string_view key);
  /// Keeps `entry` under `key` in both tiers. A disk failure is a warning, not
  /// an error: the caller has the entry it just built. Only the first disk
  /// failure of this cache warns, so a read-only directory costs one line.
  CacheStore store(std::string_view key, const CacheEntry &entry);

  /// A copy of the counters.
  KernelCacheStats stats() const;
  /// Empties the memory tier (the disk tier is untouched).
  void dropMemoryTier();

  /// The disk tier's root, if any.
  const std::optional<std::filesystem::path> &root() const { return options_.root; }
  /// The file an entry for `key` is stored in (nullopt without a disk tier).
  std::optional<std::filesystem::path> entryPath(std::string_view key) const;

  /// Warnings kept in the statistics.
  static constexpr size_t kMaxWarnings = 64;
  /// Temporary files older than this are a crashed writer's and are removed.
  static constexpr std::chrono::seconds kStaleTemporaryAge{3600};

private:
  struct MemoryEntry {
    std::string key;
    CacheEntry entry;
  };
  void rememberLocked(const std::string &hashHex, std::string_view key, const CacheEntry &entry);
  void warnLocked(std::vector<std::string> &warnings, std::string message);
  std::optional<CacheEntry> readFromDisk(std::string_view key, std::vector<std::string> &warnings);
  bool writeToDisk(std::string_view key, const CacheEntry &entry,
                   std::vector<std::string> &warnings);

  KernelCacheOptions options_;
  mutable std::mutex mutex_;
  /// Most recently used at the front; the map indexes it by key hash.
  std::list<std::pair<std::string, MemoryEntry>> lru_;
  std::unordered_map<std::string, std::list<std::pair<std::string, MemoryEntry>>::iterator> index_;
  KernelCacheStats stats_;
  bool warnedAboutDisk_ = false;
  bool sweptTemporaries_ = false;
};

/// The one cache of this process for `root` (nullopt: memory only), made on
/// first use, so every compile in a process shares its memory tier.
KernelCache &sharedKernelCache(const std::optional<std::filesystem::path> &root);

} // namespace kiln::runtime
