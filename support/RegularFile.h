// Reading the files kiln is given: only regular files (a FIFO, a device, a
// socket or a directory is refused without blocking on it), read with a size
// bound, every failure an Error that names the file and what it was for.
#pragma once

#include "support/Error.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

/// Closes a file descriptor on every path out of a function.
class FileDescriptor {
public:
  explicit FileDescriptor(int fd = -1) : fd_(fd) {}
  FileDescriptor(FileDescriptor &&other) noexcept : fd_(other.release()) {}
  FileDescriptor &operator=(FileDescriptor &&other) noexcept;
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  ~FileDescriptor();
  int get() const { return fd_; }
  /// Gives up ownership: the caller closes the descriptor.
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  /// Closes now, returning whether close succeeded (it can report a failed write).
  bool close();

private:
  int fd_;
};

/// An open regular file and its size when it was opened.
struct RegularFile {
  FileDescriptor descriptor;
  uint64_t size = 0;
};

/// Opens `path` for reading when it is a regular file (symlinks followed). A
/// FIFO is opened without blocking and then refused, like a device, a socket
/// or a directory. Errors name `what` ("IR file", "bundle") and the path:
/// NotFound when nothing is there (ENOENT, ENOTDIR), IOError otherwise.
Expected<RegularFile> openRegularFile(const std::string &path, std::string_view what);

/// The whole regular file at `path`, refused (FormatError) when it holds more
/// than `maxBytes` (also when it grows past that while being read). A size the
/// machine cannot hold is an OutOfMemory error, not std::bad_alloc.
Expected<std::string> readRegularFile(const std::string &path, std::string_view what,
                                      uint64_t maxBytes);

/// Reads all of `size` bytes at `offset`; an Error naming `what` and `path`
/// on a read error or an early end of file.
Expected<void> readExactly(const RegularFile &file, void *out, uint64_t size, uint64_t offset,
                           std::string_view what, const std::string &path);

} // namespace kiln
