// Crash-safe whole-file writes (temporary file, fsync, rename), shared by the
// kernel cache, AOT bundles, checkpoints and every other file kiln writes whole.
#pragma once

#include "support/Error.h"
#include "support/RegularFile.h"

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace kiln::runtime {

/// Writes all of `bytes` to `fd`, retrying short writes; false on an error (errno set).
bool writeAll(int fd, std::string_view bytes);

/// Writes `bytes` to `path` so that no reader ever sees part of them: a fresh
/// temporary file `temporaryName` in the same directory (created exclusively),
/// fsync, rename over `path`, then fsync of the directory so the rename
/// survives a crash. The temporary file is removed on every failure. Returns an
/// error message, or empty on success.
std::string writeFileAtomically(const std::filesystem::path &path,
                                const std::string &temporaryName, std::string_view bytes);

/// Writes a file's contents to an open descriptor; returns 0 or the errno of
/// the call that failed.
using ContentWriter = std::function<int(int fd)>;

/// writeFileAtomically with a temporary name unique in this process (a hidden
/// file beside `path`, ".NAME.tmp-PID-N"), the contents streamed by
/// `writeContents`; the error names `what` and `path` ("cannot write bundle
/// 'x.kiln': ..."). Temporaries beside `path` left by a process that died
/// mid-write (killed, out of power) are removed first.
Expected<void> replaceFileWith(const std::string &path, std::string_view what,
                               const ContentWriter &writeContents);

/// replaceFileWith for contents already in memory. For every file kiln writes
/// whole: bundles, sweep exports, tuning exports, .npy files.
Expected<void> replaceFile(const std::string &path, std::string_view bytes,
                           std::string_view what = "file");

} // namespace kiln::runtime
