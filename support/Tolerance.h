// How close a computed tensor must be to the fp64 reference, per dtype, and the
// comparison every numeric test, `kiln run --check` and the benchmarks use.
#pragma once

#include "support/HostTensor.h"

#include <string>

namespace kiln {

/// |actual - expected| <= abs * scale + rel * |expected|, where `scale` is the
/// largest |expected| of the tensor (at least 1), so cancellation in long sums
/// is judged against the tensor's magnitude.
struct Tolerance {
  double rel = 0;
  double abs = 0;
};

/// Tolerances for compiled kernels against the fp64 reference: a few units in
/// the last place of the dtype for floats (sums reassociated by blocking and
/// vectorization included), exact for integers and bool.
Tolerance toleranceFor(DType dtype);

struct Comparison {
  bool ok = true;
  double maxAbsError = 0;
  double maxRelError = 0;
  int64_t mismatches = 0;
  int64_t firstMismatch = -1; ///< flat index, -1 when none
  std::string firstMismatchStr; ///< "index 17: got 1.5, expected 1.25"
};

/// Compares element by element; NaN matches NaN, infinities must match exactly.
/// Shapes and dtypes must already agree (a mismatch is reported as not ok).
Comparison compareTensors(const HostTensor &actual, const HostTensor &expected,
                          Tolerance tolerance);

} // namespace kiln
