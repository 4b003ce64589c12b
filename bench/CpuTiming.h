// The CPU benchmarks' timing budget, shared with bench/torch_cpu.py (bench/README.md), and
// their records: every implementation of a workload (kiln, OpenBLAS, oneDNN) is timed by
// timeCpuRuns and reported by printTime, so the columns of a row are measured alike.
#pragma once

#include "bench/JsonLines.h"
#include "bench/TimedRuns.h"

#include <fmt/format.h>

#include <string_view>
#include <vector>

namespace kiln::bench {

constexpr TimingBudget kCpuBudget{
    .warmupRuns = 3, .minRuns = 10, .minSeconds = 0.5, .maxSeconds = 10.0, .minRunsWhenSlow = 3};

inline Expected<std::vector<double>> timeCpuRuns(const std::function<Expected<void>()> &run) {
  return timeRuns(kCpuBudget, run);
}

/// One "time" record: the median and minimum of `seconds`, with the implementation's check of
/// its last run's output ("ok" or what is wrong) and what it ran (kiln's schedules, oneDNN's
/// primitive).
inline void printTime(std::string_view impl, std::string_view workload, std::vector<double> seconds,
                      double flops, std::string_view check, std::string_view schedules = {}) {
  double median = sortedMedian(seconds);
  printLine(fmt::format(R"({{"kind": "time", "impl": {}, "workload": {}, "median_ms": {:.6f}, )"
                        R"("min_ms": {:.6f}, "runs": {}, "flops": {:.0f}, "check": {}, )"
                        R"("schedules": {}}})",
                        jsonString(impl), jsonString(workload), median * 1e3,
                        seconds.front() * 1e3, seconds.size(), flops, jsonString(check),
                        jsonString(schedules)));
}

inline void printError(std::string_view impl, std::string_view workload, std::string_view message) {
  printLine(fmt::format(R"({{"kind": "error", "impl": {}, "workload": {}, "message": {}}})",
                        jsonString(impl), jsonString(workload), jsonString(message)));
}

} // namespace kiln::bench
