// The kernel cache's directory: environment variables, file names, listing
// and clearing.
#include "runtime/cache/CacheDirectory.h"

#include "runtime/cache/CacheEntryFile.h"
#include "support/RegularFile.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <pwd.h>
#include <unistd.h>

namespace kiln::runtime {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kEntrySuffix = ".kce";
constexpr std::string_view kTemporaryMarker = ".kce.tmp-";

std::optional<std::string> environment(const char *name) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return std::nullopt;
  return std::string(value);
}

std::optional<fs::path> homeDirectory() {
  if (auto home = environment("HOME"))
    return fs::path(*home);
  // Tools that scrub the environment (lit, cron) may leave HOME unset.
  if (const passwd *entry = getpwuid(getuid()); entry && entry->pw_dir && *entry->pw_dir)
    return fs::path(entry->pw_dir);
  return std::nullopt;
}

bool isHexDigits(std::string_view text) {
  return text.size() == 32 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

} // namespace

CacheLocation cacheLocationFromEnvironment() {
  if (auto mode = environment("KILN_CACHE")) {
    std::string lower = *mode;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == "off" || lower == "0" || lower == "false" || lower == "no")
      return {std::nullopt, fmt::format("disabled by KILN_CACHE={}", *mode)};
  }
  if (auto directory = environment("KILN_CACHE_DIR"))
    return {fs::path(*directory), "$KILN_CACHE_DIR"};
  if (auto xdg = environment("XDG_CACHE_HOME"))
    return {fs::path(*xdg) / "kiln", "$XDG_CACHE_HOME/kiln"};
  if (auto home = homeDirectory())
    return {*home / ".cache" / "kiln", "~/.cache/kiln"};
  return {std::nullopt, "disabled: no $KILN_CACHE_DIR, $XDG_CACHE_HOME or home directory"};
}

fs::path kernelEntryDirectory(const fs::path &root) { return root / "kernels"; }

std::string entryFileName(const Hash128 &keyHash) {
  return keyHash.hex() + std::string(kEntrySuffix);
}

std::string temporaryFileName(const Hash128 &keyHash) {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}{}{}-{}", keyHash.hex(), kTemporaryMarker, getpid(), counter++);
}

bool isEntryFileName(std::string_view name) {
  return name.size() == 32 + kEntrySuffix.size() && name.ends_with(kEntrySuffix) &&
         isHexDigits(name.substr(0, 32));
}

bool isTemporaryFileName(std::string_view name) {
  return name.size() > 32 + kTemporaryMarker.size() && isHexDigits(name.substr(0, 32)) &&
         name.substr(32, kTemporaryMarker.size()) == kTemporaryMarker;
}

Expected<void> createCacheDirectory(const fs::path &directory) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (!error)
    return {};
  for (fs::path step = directory; !step.empty() && step != step.root_path();
       step = step.parent_path()) {
    std::error_code linkError;
    if (fs::is_symlink(step, linkError) && !fs::exists(step, linkError))
      return makeError(ErrorCode::IOError,
                       fmt::format("cannot create '{}': '{}' is a symbolic link to '{}', which "
                                   "does not exist",
                                   directory.string(), step.string(),
                                   fs::read_symlink(step, linkError).string()));
  }
  return makeError(ErrorCode::IOError, fmt::format("cannot create '{}': {}", directory.string(),
                                                   error.message()));
}

Expected<std::vector<CacheFileInfo>> listCacheEntries(const fs::path &root) {
  fs::path directory = kernelEntryDirectory(root);
  std::vector<CacheFileInfo> files;
  std::error_code error;
  if (!fs::exists(directory, error))
    return files;
  fs::directory_iterator it(directory, error);
  if (error)
    return makeError(ErrorCode::IOError, fmt::format("cannot list the kernel cache '{}': {}",
                                                     directory.string(), error.message()));
  for (const fs::directory_entry &file : it) {
    std::string name = file.path().filename().string();
    if (!isEntryFileName(name))
      continue;
    CacheFileInfo info;
    info.path = file.path();
    std::error_code statError;
    auto modified = file.last_write_time(statError);
    if (statError) // removed by a concurrent clear or rebuild: not there any more
      continue;
    info.modified = std::chrono::file_clock::to_sys(modified);
    // A directory, a FIFO or a link to a device is listed as a bad entry,
    // never read (a FIFO would block, /dev/zero would never end).
    Expected<std::string> bytes =
        readRegularFile(file.path().string(), "kernel-cache entry", kMaxCacheEntryBytes);
    if (!bytes && bytes.error().code() == ErrorCode::NotFound)
      continue;
    if (!bytes) {
      info.problem = bytes.error().message();
    } else {
      info.bytes = static_cast<int64_t>(bytes->size());
      auto key = readCacheEntryKey(*bytes);
      if (key)
        info.key = std::move(*key);
      else
        info.problem = key.error().message();
    }
    files.push_back(std::move(info));
  }
  std::sort(files.begin(), files.end(),
            [](const CacheFileInfo &a, const CacheFileInfo &b) { return a.path < b.path; });
  return files;
}

Expected<ClearResult> clearCache(const fs::path &root) {
  fs::path directory = kernelEntryDirectory(root);
  ClearResult result;
  std::error_code error;
  if (!fs::exists(directory, error))
    return result;
  fs::directory_iterator it(directory, error);
  if (error)
    return makeError(ErrorCode::IOError, fmt::format("cannot list the kernel cache '{}': {}",
                                                     directory.string(), error.message()));
  for (const fs::directory_entry &file : it) {
    std::string name = file.path().filename().string();
    bool entry = isEntryFileName(name);
    if (!entry && !isTemporaryFileName(name))
      continue;
    std::error_code sizeError;
    int64_t bytes = static_cast<int64_t>(file.file_size(sizeError));
    // remove_all: an entry name may hold a directory (never kiln's doing);
    // it removes a symbolic link, never what the link points to.
    std::error_code removeError;
    if (fs::remove_all(file.path(), removeError) == 0 || removeError) {
      if (removeError)
        return makeError(ErrorCode::IOError, fmt::format("cannot remove '{}': {}",
                                                         file.path().string(),
                                                         removeError.message()));
      continue; // already gone
    }
    (entry ? result.entries : result.temporaries) += 1;
    result.bytes += sizeError ? 0 : bytes;
  }
  return result;
}

int removeStaleTemporaries(const fs::path &directory, std::chrono::seconds age) {
  int removed = 0;
  std::error_code error;
  fs::directory_iterator it(directory, error);
  if (error)
    return 0;
  auto now = fs::file_time_type::clock::now();
  for (const fs::directory_entry &file : it) {
    if (!isTemporaryFileName(file.path().filename().string()))
      continue;
    std::error_code fileError;
    auto modified = file.last_write_time(fileError);
    if (!fileError && now - modified > age && fs::remove(file.path(), fileError))
      ++removed;
  }
  return removed;
}

EvictResult evictToFit(const fs::path &directory, int64_t maxBytes, const fs::path &keep) {
  struct File {
    fs::path path;
    int64_t bytes;
    fs::file_time_type modified;
  };
  std::vector<File> files;
  int64_t total = 0;
  std::error_code error;
  for (fs::directory_iterator it(directory, error), end; !error && it != end;
       it.increment(error)) {
    if (!isEntryFileName(it->path().filename().string()))
      continue;
    std::error_code statError;
    int64_t bytes = static_cast<int64_t>(it->file_size(statError));
    fs::file_time_type modified = it->last_write_time(statError);
    if (statError)
      continue;
    files.push_back({it->path(), bytes, modified});
    total += bytes;
  }
  EvictResult result;
  if (total <= maxBytes)
    return result;
  std::sort(files.begin(), files.end(),
            [](const File &a, const File &b) { return a.modified < b.modified; });
  int64_t target = maxBytes / 4 * 3;
  for (const File &file : files) {
    if (total <= target)
      break;
    if (file.path == keep)
      continue;
    std::error_code removeError;
    if (fs::remove(file.path, removeError)) {
      total -= file.bytes;
      ++result.entries;
      result.bytes += file.bytes;
    }
  }
  return result;
}

int64_t cacheMaxBytesFromEnvironment() {
  if (auto text = environment("KILN_CACHE_MAX_MB")) {
    int64_t megabytes = 0;
    auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), megabytes);
    if (error == std::errc() && end == text->data() + text->size() && megabytes > 0 &&
        megabytes < (int64_t{1} << 40))
      return megabytes << 20;
    std::fprintf(stderr,
                 "kiln: ignoring KILN_CACHE_MAX_MB='%s' (expected a positive number of "
                 "megabytes); the kernel cache keeps at most %lld MiB on disk\n",
                 text->c_str(), static_cast<long long>(kDefaultCacheMaxBytes >> 20));
  }
  return kDefaultCacheMaxBytes;
}

} // namespace kiln::runtime
