// The timing method the CPU benchmarks share with their PyTorch twins (bench/README.md):
// warm-up runs, then runs until both a minimum count and a minimum time are reached; a
// workload slower than the maximum time in all stops after fewer runs.
#pragma once

#include "support/Elapsed.h"
#include "support/Error.h"
#include "support/Median.h"

#include <algorithm>
#include <functional>
#include <vector>

namespace kiln::bench {

struct TimingBudget {
  int warmupRuns = 3;
  int minRuns = 10;
  double minSeconds = 0.5;
  double maxSeconds = 10.0;
  int minRunsWhenSlow = 3;
};

/// Seconds per timed run of `run`, or the first run's error.
inline Expected<std::vector<double>> timeRuns(const TimingBudget &budget,
                                              const std::function<Expected<void>()> &run) {
  for (int i = 0; i < budget.warmupRuns; ++i)
    KILN_TRY_VOID(run());
  std::vector<double> seconds;
  double total = 0;
  while (true) {
    auto start = std::chrono::steady_clock::now();
    KILN_TRY_VOID(run());
    double elapsed = secondsSince(start);
    seconds.push_back(elapsed);
    total += elapsed;
    int runs = static_cast<int>(seconds.size());
    if (runs >= budget.minRuns && total >= budget.minSeconds)
      break;
    if (total >= budget.maxSeconds && runs >= budget.minRunsWhenSlow)
      break;
  }
  return seconds;
}

/// The median of `seconds`, which it sorts (the fastest comes first).
inline double sortedMedian(std::vector<double> &seconds) {
  std::sort(seconds.begin(), seconds.end());
  return median(seconds);
}

} // namespace kiln::bench
