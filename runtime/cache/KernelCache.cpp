// The two tiers of the kernel cache; entries reach disk through AtomicFile.
#include "runtime/cache/KernelCache.h"

#include "runtime/cache/AtomicFile.h"
#include "runtime/cache/CacheDirectory.h"
#include "runtime/cache/ContentHash.h"
#include "support/RegularFile.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::runtime {

namespace fs = std::filesystem;

KernelCache::KernelCache(KernelCacheOptions options) : options_(std::move(options)) {}

std::optional<fs::path> KernelCache::entryPath(std::string_view key) const {
  if (!options_.root)
    return std::nullopt;
  return kernelEntryDirectory(*options_.root) / entryFileName(hashBytes(key));
}

void KernelCache::warnLocked(std::vector<std::string> &warnings, std::string message) {
  if (stats_.warnings.size() == kMaxWarnings)
    stats_.warnings.erase(stats_.warnings.begin());
  stats_.warnings.push_back(message);
  warnings.push_back(std::move(message));
}

void KernelCache::rememberLocked(const std::string &hashHex, std::string_view key,
                                 const CacheEntry &entry) {
  int64_t bytes = entry.payloadBytes();
  if (auto found = index_.find(hashHex); found != index_.end()) {
    stats_.memoryBytes -= found->second->second.entry.payloadBytes();
    lru_.erase(found->second);
    index_.erase(found);
  }
  if (bytes > options_.memoryCapacityBytes)
    return; // larger than the whole tier: keeping it would evict everything else
  lru_.emplace_front(hashHex, MemoryEntry{std::string(key), entry});
  index_[hashHex] = lru_.begin();
  stats_.memoryBytes += bytes;
  while (stats_.memoryBytes > options_.memoryCapacityBytes && !lru_.empty()) {
    stats_.memoryBytes -= lru_.back().second.entry.payloadBytes();
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  stats_.memoryEntries = static_cast<int64_t>(lru_.size());
}

std::optional<CacheEntry> KernelCache::readFromDisk(std::string_view key,
                                                    std::vector<std::string> &warnings) {
  std::optional<fs::path> path = entryPath(key);
  if (!path)
    return std::nullopt;
  Expected<std::string> bytes = readRegularFile(path->string(), "kernel-cache entry",
                                                 kMaxCacheEntryBytes);
  if (!bytes) {
    // No entry, or no cache directory at all (a path component is a file;
    // the write that follows reports that once). Anything else, a FIFO or a
    // link to a device included, is replaced by the rebuilt entry.
    if (bytes.error().code() != ErrorCode::NotFound) {
      std::lock_guard lock(mutex_);
      warnLocked(warnings, fmt::format("kernel cache: {}; rebuilding it", bytes.error().message()));
    }
    return std::nullopt;
  }
  auto entry = decodeCacheEntry(*bytes, key);
  std::lock_guard lock(mutex_);
  if (!entry) {
    ++stats_.rejected;
    warnLocked(warnings, fmt::format("kernel cache: entry '{}' is not trusted ({}); rebuilding it",
                                     path->string(), entry.error().message()));
    return std::nullopt;
  }
  stats_.bytesRead += static_cast<int64_t>(bytes->size());
  // A use: eviction removes the entries read or written longest ago.
  std::error_code touchError;
  fs::last_write_time(*path, fs::file_time_type::clock::now(), touchError);
  return std::move(*entry);
}

CacheLookup KernelCache::lookup(std::string_view key) {
  CacheLookup result;
  std::string hashHex = hashBytes(key).hex();
  {
    std::lock_guard lock(mutex_);
    if (auto found = index_.find(hashHex);
        found != index_.end() && found->second->second.key == key) {
      lru_.splice(lru_.begin(), lru_, found->second);
      ++stats_.memoryHits;
      result.entry = found->second->second.entry;
      result.tier = CacheTier::Memory;
      return result;
    }
  }
  // Disk reads happen outside the lock, so one slow read does not stall other threads.
  std::optional<CacheEntry> entry = readFromDisk(key, result.warnings);
  std::lock_guard lock(mutex_);
  if (!entry) {
    ++stats_.misses;
    return result;
  }
  ++stats_.diskHits;
  rememberLocked(hashHex, key, *entry);
  result.entry = std::move(entry);
  result.tier = CacheTier::Disk;
  return result;
}

bool KernelCache::writeToDisk(std::string_view key, const CacheEntry &entry,
                              std::vector<std::string> &warnings) {
  fs::path directory = kernelEntryDirectory(*options_.root);
  Hash128 keyHash = hashBytes(key);
  std::string bytes = encodeCacheEntry(key, entry);
  Expected<void> created = createCacheDirectory(directory);
  std::string failure =
      !created ? created.error().message()
            : writeFileAtomically(directory / entryFileName(keyHash), temporaryFileName(keyHash),
                                  bytes);
  EvictResult evicted;
  if (failure.empty())
    evicted = evictToFit(directory, options_.diskCapacityBytes,
                         directory / entryFileName(keyHash));
  std::lock_guard lock(mutex_);
  stats_.evicted += evicted.entries;
  if (!failure.empty()) {
    ++stats_.writeFailures;
    if (!warnedAboutDisk_)
      warnLocked(warnings, fmt::format("kernel cache: {}; compiled code is not kept on disk "
                                       "(set KILN_CACHE_DIR to a writable directory, or "
                                       "KILN_CACHE=off)",
                                       failure));
    warnedAboutDisk_ = true;
    return false;
  }
  ++stats_.writes;
  stats_.bytesWritten += static_cast<int64_t>(bytes.size());
  if (!sweptTemporaries_) // once per cache: a crashed writer's leftovers
    removeStaleTemporaries(directory, kStaleTemporaryAge);
  sweptTemporaries_ = true;
  return true;
}

CacheStore KernelCache::store(std::string_view key, const CacheEntry &entry) {
  CacheStore result;
  {
    std::lock_guard lock(mutex_);
    rememberLocked(hashBytes(key).hex(), key, entry);
  }
  if (options_.root)
    result.writtenToDisk = writeToDisk(key, entry, result.warnings);
  return result;
}

KernelCacheStats KernelCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

KernelCache &sharedKernelCache(const std::optional<fs::path> &root) {
  static std::mutex mutex;
  // Caches are never destroyed: compiles on other threads may hold references
  // until the process exits.
  static auto *caches = new std::map<std::optional<std::string>, std::unique_ptr<KernelCache>>();
  std::optional<std::string> name;
  if (root) {
    std::error_code ignored;
    fs::path absolute = fs::absolute(*root, ignored);
    name = (absolute.empty() ? *root : absolute).lexically_normal().string();
  }
  std::lock_guard lock(mutex);
  std::unique_ptr<KernelCache> &cache = (*caches)[name];
  if (!cache)
    cache = std::make_unique<KernelCache>(
        KernelCacheOptions{.root = root, .diskCapacityBytes = cacheMaxBytesFromEnvironment()});
  return *cache;
}

void KernelCache::dropMemoryTier() {
  std::lock_guard lock(mutex_);
  lru_.clear();
  index_.clear();
  stats_.memoryBytes = 0;
  stats_.memoryEntries = 0;
}

} // namespace kiln::runtime
