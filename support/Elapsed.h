// Elapsed wall time on the steady clock, as the compile reports and the benchmarks quote it.
#pragma once

#include <chrono>

namespace kiln {

/// Seconds from `start` to now.
inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Milliseconds from `start` to now.
inline double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace kiln
