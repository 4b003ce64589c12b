// Whole-file reads and crash-safe writes.
#include "runtime/cache/AtomicFile.h"

#include <fmt/format.h>

#include <atomic>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::runtime {

namespace fs = std::filesystem;

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0)
    ::close(fd_);
}

bool FileDescriptor::close() {
  int fd = fd_;
  fd_ = -1;
  return ::close(fd) == 0;
}

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

Expected<void> replaceFile(const std::string &path, std::string_view bytes,
                           std::string_view what) {
  static std::atomic<uint64_t> counter{0};
  std::error_code error;
  fs::path target = path.empty() ? fs::path() : fs::absolute(path, error);
  if (error || path.empty())
    return makeError(ErrorCode::IOError, fmt::format("cannot write {} '{}': {}", what, path,
                                                     error ? error.message() : "empty path"));
  std::string temporary = fmt::format(".{}.tmp-{}-{}", target.filename().string(), ::getpid(),
                                      counter.fetch_add(1));
  std::string problem = writeFileAtomically(target, temporary, bytes);
  if (!problem.empty())
    return makeError(ErrorCode::IOError,
                     fmt::format("cannot write {} '{}': {}", what, path, problem));
  return {};
}

} // namespace kiln::runtime
