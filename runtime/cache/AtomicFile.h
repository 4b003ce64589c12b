// Whole-file reads and crash-safe whole-file writes (temporary file, fsync,
// rename), shared by the kernel cache and AOT bundles.
#pragma once

#include "support/Error.h"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::runtime {

/// Closes a file descriptor on every path out of a function.
class FileDescriptor {
public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  ~FileDescriptor();
  int get() const { return fd_; }
  /// Closes now, returning whether close succeeded (it can report a failed write).
  bool close();

private:
  int fd_;
};

/// Writes all of `bytes` to `fd`, retrying short writes; false on an error (errno set).
bool writeAll(int fd, std::string_view bytes);

/// The whole file, or nullopt with the reason in `errorNumber` (ENOENT when there is none).
std::optional<std::string> readWholeFile(const std::filesystem::path &path, int &errorNumber);

/// Writes `bytes` to `path` so that no reader ever sees part of them: a fresh
/// temporary file `temporaryName` in the same directory (created exclusively),
/// fsync, rename over `path`, then fsync of the directory so the rename
/// survives a crash. The temporary file is removed on every failure. Returns an
/// error message, or empty on success.
std::string writeFileAtomically(const std::filesystem::path &path,
                                const std::string &temporaryName, std::string_view bytes);

/// writeFileAtomically with a temporary name unique in this process (a hidden
/// file beside `path`); the error names `what` and `path` ("cannot write
/// bundle 'x.kiln': ..."). For every file kiln writes whole: bundles, sweep
/// exports, tuning exports.
Expected<void> replaceFile(const std::string &path, std::string_view bytes,
                           std::string_view what = "file");

} // namespace kiln::runtime
