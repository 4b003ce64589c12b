// The two tiers of the kernel cache and the crash-safe way entries reach disk.
#include "runtime/cache/KernelCache.h"

#include "runtime/cache/CacheDirectory.h"
#include "runtime/cache/ContentHash.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::runtime {
namespace {

namespace fs = std::filesystem;

/// Closes a file descriptor on every path out of a function.
class FileDescriptor {
public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int get() const { return fd_; }
  /// Closes now, returning whether close succeeded (it can report a failed write).
  bool close() {
    int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

private:
  int fd_;
};

/// The whole file, or nullopt with the reason in `errorNumber` (ENOENT when there is none).
std::optional<std::string> readWholeFile(const fs::path &path, int &errorNumber) {
  FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  errorNumber = errno;
  if (file.get() < 0)
    return std::nullopt;
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) {
    errorNumber = errno;
    return std::nullopt;
  }
  std::string bytes;
  bytes.reserve(static_cast<size_t>(info.st_size));
  char buffer[1 << 16];
  while (true) {
    ssize_t got = ::read(file.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      errorNumber = errno;
      return std::nullopt;
    }
    if (got == 0)
      return bytes;
    bytes.append(buffer, static_cast<size_t>(got));
  }
}

bool writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t wrote = ::write(fd, bytes.data(), bytes.size());
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote <= 0)
      return false;
    bytes.remove_prefix(static_cast<size_t>(wrote));
  }
  return true;
}

/// Writes `bytes` to `path` so that no reader ever sees part of them: a fresh
/// temporary file in the same directory, fsync, rename over `path`, then fsync
/// of the directory so the rename survives a crash. The temporary file is
/// removed on every failure. Returns an error message, or empty on success.
std::string writeFileAtomically(const fs::path &path, const std::string &temporaryName,
                                std::string_view bytes) {
  fs::path directory = path.parent_path();
  fs::path temporary = directory / temporaryName;
  FileDescriptor file(
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (file.get() < 0)
    return fmt::format("cannot create '{}': {}", temporary.string(), std::strerror(errno));
  auto fail = [&](std::string_view what) {
    std::string message =
        fmt::format("cannot {} '{}': {}", what, temporary.string(), std::strerror(errno));
    ::unlink(temporary.c_str());
    return message;
  };
  if (!writeAll(file.get(), bytes))
    return fail("write");
  if (::fsync(file.get()) != 0)
    return fail("sync");
  if (!file.close())
    return fail("close");
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string message = fmt::format("cannot rename '{}' to '{}': {}", temporary.string(),
                                      path.string(), std::strerror(errno));
    ::unlink(temporary.c_str());
    return message;
  }
  // Best effort: the entry is complete either way; this only makes the rename durable.
  FileDescriptor directoryFd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (directoryFd.get() >= 0)
    ::fsync(directoryFd.get());
  return {};
}

} // namespace

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
  int errorNumber = 0;
  std::optional<std::string> bytes = readWholeFile(*path, errorNumber);
  if (!bytes) {
    // No entry, or no cache directory at all (ENOTDIR: a path component is a
    // file; the write that follows reports that once).
    if (errorNumber != ENOENT && errorNumber != ENOTDIR) {
      std::string reason = std::strerror(errorNumber);
      std::lock_guard lock(mutex_);
      warnLocked(warnings, fmt::format("kernel cache: cannot read entry '{}': {}; rebuilding it",
                                       path->string(), reason));
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
  std::error_code error;
  fs::create_directories(directory, error);
  std::string failure =
      error ? fmt::format("cannot create '{}': {}", directory.string(), error.message())
            : writeFileAtomically(directory / entryFileName(keyHash), temporaryFileName(keyHash),
                                  bytes);
  std::lock_guard lock(mutex_);
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
    cache = std::make_unique<KernelCache>(KernelCacheOptions{.root = root});
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
