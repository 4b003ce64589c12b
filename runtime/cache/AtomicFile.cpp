// Crash-safe whole-file writes, and the removal of what interrupted ones left.
#include "runtime/cache/AtomicFile.h"

#include <fmt/format.h>

#include <atomic>
#include <charconv>
#include <csignal>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::runtime {

namespace fs = std::filesystem;

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

namespace {

/// The temporary-file protocol of writeFileAtomically, with the contents
/// streamed by `writeContents`.
std::string writeFileAtomicallyWith(const fs::path &path, const std::string &temporaryName,
                                    const ContentWriter &writeContents) {
  fs::path directory = path.parent_path();
  fs::path temporary = directory / temporaryName;
  FileDescriptor file(
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (file.get() < 0)
    return fmt::format("cannot create '{}': {}", temporary.string(), std::strerror(errno));
  auto fail = [&](std::string_view what, int errorNumber) {
    std::string message =
        fmt::format("cannot {} '{}': {}", what, temporary.string(), std::strerror(errorNumber));
    ::unlink(temporary.c_str());
    return message;
  };
  if (int errorNumber = writeContents(file.get()))
    return fail("write", errorNumber);
  if (::fsync(file.get()) != 0)
    return fail("sync", errno);
  if (!file.close())
    return fail("close", errno);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string message = fmt::format("cannot rename '{}' to '{}': {}", temporary.string(),
                                      path.string(), std::strerror(errno));
    ::unlink(temporary.c_str());
    return message;
  }
  // Best effort: the file is complete either way; this only makes the rename durable.
  FileDescriptor directoryFd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (directoryFd.get() >= 0)
    ::fsync(directoryFd.get());
  return {};
}

/// Removes ".NAME.tmp-PID-N" files beside `target` whose writer no longer
/// runs: a write killed between create and rename leaves one, and nothing
/// else would ever remove it. A live writer's temporary is left alone.
void removeAbandonedTemporaries(const fs::path &target) {
  std::string prefix = fmt::format(".{}.tmp-", target.filename().string());
  std::error_code error;
  fs::directory_iterator entries(target.parent_path(), error);
  for (; !error && entries != fs::directory_iterator(); entries.increment(error)) {
    std::string name = entries->path().filename().string();
    if (!name.starts_with(prefix))
      continue;
    std::string_view rest = std::string_view(name).substr(prefix.size());
    pid_t writer = 0;
    auto [end, status] = std::from_chars(rest.data(), rest.data() + rest.size(), writer);
    if (status != std::errc() || end == rest.data() || *end != '-' || writer <= 0)
      continue;
    if (::kill(writer, 0) != 0 && errno == ESRCH)
      ::unlink(entries->path().c_str());
  }
}

ContentWriter writerOf(std::string_view bytes) {
  return [bytes](int fd) { return writeAll(fd, bytes) ? 0 : (errno != 0 ? errno : EIO); };
}

} // namespace

std::string writeFileAtomically(const fs::path &path, const std::string &temporaryName,
                                std::string_view bytes) {
  return writeFileAtomicallyWith(path, temporaryName, writerOf(bytes));
}

Expected<void> replaceFileWith(const std::string &path, std::string_view what,
                               const ContentWriter &writeContents) {
  static std::atomic<uint64_t> counter{0};
  std::error_code error;
  fs::path target = path.empty() ? fs::path() : fs::absolute(path, error);
  if (error || path.empty())
    return makeError(ErrorCode::IOError, fmt::format("cannot write {} '{}': {}", what, path,
                                                     error ? error.message() : "empty path"));
  removeAbandonedTemporaries(target);
  std::string temporary = fmt::format(".{}.tmp-{}-{}", target.filename().string(), ::getpid(),
                                      counter.fetch_add(1));
  std::string problem = writeFileAtomicallyWith(target, temporary, writeContents);
  if (!problem.empty())
    return makeError(ErrorCode::IOError,
                     fmt::format("cannot write {} '{}': {}", what, path, problem));
  return {};
}

Expected<void> replaceFile(const std::string &path, std::string_view bytes,
                           std::string_view what) {
  return replaceFileWith(path, what, writerOf(bytes));
}

} // namespace kiln::runtime
