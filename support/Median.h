// The median of a sample, as timings are reported: the mean of the middle two for an even count.
#pragma once

#include <algorithm>
#include <vector>

namespace kiln {

/// The median of `values`; 0 for none.
inline double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

} // namespace kiln
