// The timing method of the CPU benchmarks, shared with bench/torch_cpu.py (bench/README.md):
// warm-up runs, then runs until both kMinRuns and kMinSeconds are reached; a workload slower
// than kMaxSeconds in all stops after kMinRunsWhenSlow runs. Every implementation of a workload
// (kiln, OpenBLAS, oneDNN) is timed by this one function and reported by printTime.
#pragma once

#include "bench/JsonLines.h"
#include "support/Error.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string_view>
#include <vector>

namespace kiln::bench {

constexpr int kWarmupRuns = 3;
constexpr int kMinRuns = 10;
constexpr double kMinSeconds = 0.5;
constexpr double kMaxSeconds = 10.0;
constexpr int kMinRunsWhenSlow = 3;

/// Seconds per timed run, or the first run's error.
inline Expected<std::vector<double>> timeRuns(const std::function<Expected<void>()> &run) {
  for (int i = 0; i < kWarmupRuns; ++i)
    KILN_TRY_VOID(run());
  std::vector<double> seconds;
  double total = 0;
  while (true) {
    auto start = std::chrono::steady_clock::now();
    KILN_TRY_VOID(run());
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds.push_back(elapsed);
    total += elapsed;
    int runs = static_cast<int>(seconds.size());
    if (runs >= kMinRuns && total >= kMinSeconds)
      break;
    if (total >= kMaxSeconds && runs >= kMinRunsWhenSlow)
      break;
  }
  return seconds;
}

/// One "time" record: the median and minimum of `seconds`, with the implementation's check of
/// its last run's output ("ok" or what is wrong) and, for kiln, its kernels' schedules.
inline void printTime(std::string_view impl, std::string_view workload, std::vector<double> seconds,
                      double flops, std::string_view check, std::string_view schedules = {}) {
  std::sort(seconds.begin(), seconds.end());
  size_t n = seconds.size();
  double median = n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  printLine(fmt::format(R"({{"kind": "time", "impl": {}, "workload": {}, "median_ms": {:.6f}, )"
                        R"("min_ms": {:.6f}, "runs": {}, "flops": {:.0f}, "check": {}, )"
                        R"("schedules": {}}})",
                        jsonString(impl), jsonString(workload), median * 1e3,
                        seconds.front() * 1e3, n, flops, jsonString(check),
                        jsonString(schedules)));
}

inline void printError(std::string_view impl, std::string_view workload, std::string_view message) {
  printLine(fmt::format(R"({{"kind": "error", "impl": {}, "workload": {}, "message": {}}})",
                        jsonString(impl), jsonString(workload), jsonString(message)));
}

} // namespace kiln::bench
