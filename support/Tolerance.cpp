// Per-dtype tolerances and tensor comparison.
#include "support/Tolerance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace kiln {
namespace {

/// "64..127, 192..255 (128 of 300)" for the set indices of `wrong`, at most five ranges.
std::string rangesText(const std::vector<bool> &wrong) {
  std::string text;
  int64_t ranges = 0, count = 0;
  const auto size = static_cast<int64_t>(wrong.size());
  for (int64_t i = 0; i < size; ++i) {
    if (!wrong[size_t(i)])
      continue;
    int64_t end = i;
    while (end + 1 < size && wrong[size_t(end + 1)])
      ++end;
    count += end - i + 1;
    if (++ranges <= 5)
      text += fmt::format("{}{}", ranges > 1 ? ", " : "",
                          end > i ? fmt::format("{}..{}", i, end) : fmt::format("{}", i));
    i = end;
  }
  if (ranges > 5)
    text += fmt::format(", ... ({} ranges)", ranges);
  return text + (count == size ? fmt::format(" (all {})", size)
                               : fmt::format(" ({} of {})", count, size));
}

} // namespace

Tolerance toleranceFor(DType dtype) {
  switch (dtype) {
  case DType::F64: return {1e-9, 1e-9};
  case DType::F32: return {1e-4, 1e-5};
  case DType::F16: return {4e-3, 2e-3};
  case DType::BF16: return {2e-2, 1e-2};
  case DType::F8E4M3: return {0.13, 0.07};
  case DType::F8E5M2: return {0.25, 0.13};
  case DType::I64:
  case DType::I32:
  case DType::I8:
  case DType::Bool: return {0, 0};
  }
  return {0, 0};
}

Comparison compareTensors(const HostTensor &actual, const HostTensor &expected,
                          Tolerance tolerance) {
  Comparison result;
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) {
    result.ok = false;
    result.firstMismatchStr =
        fmt::format("type {} differs from the expected {}", actual.typeStr(), expected.typeStr());
    return result;
  }
  int64_t count = expected.numElements();
  double scale = tolerance.minScale;
  for (int64_t i = 0; i < count; ++i) {
    double e = expected.getDouble(i);
    if (std::isfinite(e))
      scale = std::max(scale, std::fabs(e));
  }
  result.scale = scale;
  const std::vector<int64_t> &shape = expected.shape();
  const int64_t columns = shape.size() >= 2 ? shape.back() : 0;
  std::vector<bool> wrongRows, wrongColumns;
  if (columns > 0) {
    wrongRows.assign(size_t(count / columns), false);
    wrongColumns.assign(size_t(columns), false);
  }
  for (int64_t i = 0; i < count; ++i) {
    double a = actual.getDouble(i), e = expected.getDouble(i);
    bool match;
    if (std::isnan(e) || std::isnan(a))
      match = std::isnan(e) && std::isnan(a);
    else if (std::isinf(e) || std::isinf(a))
      match = a == e;
    else {
      double error = std::fabs(a - e);
      result.maxAbsError = std::max(result.maxAbsError, error);
      if (e != 0)
        result.maxRelError = std::max(result.maxRelError, error / std::fabs(e));
      match = error <= tolerance.abs * scale + tolerance.rel * std::fabs(e);
    }
    if (!match) {
      if (result.mismatches == 0) {
        result.firstMismatch = i;
        result.firstMismatchStr = fmt::format("index {}: got {}, expected {}", i, a, e);
      }
      ++result.mismatches;
      result.ok = false;
      if (columns > 0) {
        wrongRows[size_t(i / columns)] = true;
        wrongColumns[size_t(i % columns)] = true;
      }
    }
  }
  if (result.mismatches > 0 && columns > 0)
    result.mismatchPattern =
        fmt::format("rows {}, columns {}", rangesText(wrongRows), rangesText(wrongColumns));
  return result;
}

} // namespace kiln
