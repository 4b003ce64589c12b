// Running an external tool (ptxas, ld.lld) on files in a private temporary
// directory that is removed on every path out.
#pragma once

#include "support/Error.h"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::codegen {

/// A directory under the system temporary directory, removed with everything
/// in it when this goes out of scope (on every path, errors included).
class TemporaryDirectory {
public:
  /// "<tmp>/<prefix>-XXXXXX".
  static Expected<TemporaryDirectory> create(std::string_view prefix);
  TemporaryDirectory(TemporaryDirectory &&other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  TemporaryDirectory(const TemporaryDirectory &) = delete;
  TemporaryDirectory &operator=(const TemporaryDirectory &) = delete;
  TemporaryDirectory &operator=(TemporaryDirectory &&) = delete;
  ~TemporaryDirectory();
  const std::filesystem::path &path() const { return path_; }

private:
  explicit TemporaryDirectory(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

/// The whole file ("" when it cannot be read).
std::string readWholeFile(const std::filesystem::path &path);

/// Writes `bytes` to `path`; false when it cannot.
bool writeWholeFile(const std::filesystem::path &path, std::string_view bytes);

/// Runs `argv` (argv[0] a path) with stdout and stderr both going to
/// `logPath`; returns the exit status, or -1 when the program could not be
/// started or was killed.
int runToLog(const std::vector<std::string> &argv, const std::filesystem::path &logPath);

} // namespace kiln::codegen
