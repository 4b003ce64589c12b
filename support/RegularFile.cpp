// Opening and reading only regular files, with size bounds.
#include "support/RegularFile.h"

#include "support/MemorySize.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {

FileDescriptor &FileDescriptor::operator=(FileDescriptor &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0)
    ::close(fd_);
}

bool FileDescriptor::close() {
  int fd = release();
  return fd < 0 || ::close(fd) == 0;
}

namespace {

const char *fileKind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

std::unexpected<Error> fileError(std::string_view what, const std::string &path,
                                 std::string reason, ErrorCode code = ErrorCode::IOError) {
  return std::unexpected(Error(code, fmt::format("cannot read {} '{}': {}", what, path, reason)));
}

} // namespace

Expected<RegularFile> openRegularFile(const std::string &path, std::string_view what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  // It changes nothing for a regular file, whose reads never block.
  FileDescriptor descriptor(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (descriptor.get() < 0) {
    int error = errno;
    return fileError(what, path, std::strerror(error),
                     error == ENOENT || error == ENOTDIR ? ErrorCode::NotFound
                                                         : ErrorCode::IOError);
  }
  struct stat info {};
  if (::fstat(descriptor.get(), &info) != 0)
    return fileError(what, path, std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return fileError(what, path, fmt::format("it is {}, not a regular file", fileKind(info.st_mode)));
  return RegularFile{std::move(descriptor), static_cast<uint64_t>(info.st_size)};
}

Expected<void> readExactly(const RegularFile &file, void *out, uint64_t size, uint64_t offset,
                           std::string_view what, const std::string &path) {
  auto *bytes = static_cast<char *>(out);
  uint64_t done = 0;
  while (done < size) {
    ssize_t got = ::pread(file.descriptor.get(), bytes + done, size - done,
                          static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return fileError(what, path, std::strerror(errno));
    if (got == 0)
      return fileError(what, path,
                       fmt::format("it ends at byte {}, {} bytes short of what it announces",
                                   offset + done, size - done),
                       ErrorCode::FormatError);
    done += static_cast<uint64_t>(got);
  }
  return {};
}

Expected<std::string> readRegularFile(const std::string &path, std::string_view what,
                                      uint64_t maxBytes) {
  KILN_TRY(RegularFile file, openRegularFile(path, what));
  if (file.size > maxBytes)
    return fileError(what, path,
                     fmt::format("it holds {}, more than the {} kiln reads from one",
                                 byteSizeText(file.size), byteSizeText(maxBytes)),
                     ErrorCode::FormatError);
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(file.size));
  } catch (const std::bad_alloc &) {
    return fileError(what, path,
                     fmt::format("out of memory for its {}", byteSizeText(file.size)),
                     ErrorCode::OutOfMemory);
  }
  KILN_TRY_VOID(readExactly(file, bytes.data(), file.size, 0, what, path));
  // A file that grew since fstat (another process writing it) is refused
  // rather than read in part.
  char probe;
  ssize_t more = ::pread(file.descriptor.get(), &probe, 1, static_cast<off_t>(file.size));
  if (more > 0)
    return fileError(what, path, "it changed size while being read");
  return bytes;
}

} // namespace kiln
