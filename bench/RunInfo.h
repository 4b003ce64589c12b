// What a benchmark's result file says about the run: the commit (and whether
// the tree had changes), the machine and its load, from shell commands.
#pragma once

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>

#include <cstdio>
#include <string>

namespace kiln::bench {

/// The output of a shell command, without its trailing newline ("" on failure).
inline std::string commandOutput(const std::string &command) {
  std::string output;
  if (FILE *pipe = popen(command.c_str(), "r")) {
    char buffer[256];
    while (size_t got = std::fread(buffer, 1, sizeof buffer, pipe))
      output.append(buffer, got);
    pclose(pipe);
  }
  while (!output.empty() && output.back() == '\n')
    output.pop_back();
  return output;
}

struct RunInfo {
  std::string commit; ///< short hash of the source tree's HEAD
  bool dirty = false; ///< tracked files had uncommitted changes
  std::string machine; ///< "AMD EPYC ..., 2 cores online, 24 GiB"
  std::string loadAverage; ///< the 1, 5 and 15 minute load averages, now
  std::string date; ///< today in UTC, "2026-11-26" (result file names)
  std::string time; ///< now in UTC, "2026-11-26 14:03"

  /// "1ee05cc", or "1ee05cc (with uncommitted changes)".
  std::string commitText() const { return commit + (dirty ? " (with uncommitted changes)" : ""); }
};

/// The run's facts for the git tree at `sourceDir`.
inline RunInfo runInfo(const std::string &sourceDir) {
  RunInfo info;
  info.commit = commandOutput(fmt::format("git -C '{}' rev-parse --short HEAD", sourceDir));
  info.dirty = !commandOutput(fmt::format("git -C '{}' status --porcelain --untracked-files=no",
                                          sourceDir))
                    .empty();
  info.machine = commandOutput(
      "echo \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) "
      "cores online, $(awk '/MemTotal/ {printf \"%.0f GiB\", $2/1048576}' /proc/meminfo)\"");
  info.loadAverage = commandOutput("cut -d' ' -f1-3 /proc/loadavg");
  auto now = std::chrono::system_clock::now();
  info.date = fmt::format("{:%Y-%m-%d}", now);
  info.time = fmt::format("{:%Y-%m-%d %H:%M}", now);
  return info;
}

} // namespace kiln::bench
