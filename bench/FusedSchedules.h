// The schedules a compile chose, read from its fused dump (--dump=fused: "//   group 0
// schedule: gpu.matmul mma bm=128 ..."), for the benchmarks' reports.
#pragma once

#include <fmt/format.h>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::bench {

/// The text after "schedule: " on each line of `dump`, less a leading `opPrefix`
/// ("gpu.matmul "), joined with "; "; `none` when no line names a schedule.
inline std::string schedulesInDump(const std::string &dump, std::string_view opPrefix = {},
                                   std::string_view none = {}) {
  constexpr std::string_view kMarker = "schedule: ";
  std::vector<std::string> schedules;
  std::istringstream lines(dump);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find(kMarker);
    if (at == std::string::npos)
      continue;
    std::string schedule = line.substr(at + kMarker.size());
    if (!opPrefix.empty() && schedule.starts_with(opPrefix))
      schedule.erase(0, opPrefix.size());
    schedules.push_back(std::move(schedule));
  }
  return schedules.empty() ? std::string(none) : fmt::format("{}", fmt::join(schedules, "; "));
}

} // namespace kiln::bench
