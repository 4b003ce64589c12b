// How close a computed tensor must be to the fp64 reference, per dtype, and the
// comparison every numeric test, `kiln run --check` and the benchmarks use.
#pragma once

#include "support/HostTensor.h"

#include <string>

namespace kiln {

/// |actual - expected| <= abs * scale + rel * |expected|, where `scale` is the
/// largest finite |expected| of the tensor (at least minScale), so
/// cancellation in long sums is judged against the tensor's magnitude.
struct Tolerance {
  double rel = 0;
  double abs = 0;
  /// The least scale: 1 judges tensors of small values absolutely (the
  /// per-dtype tolerances); a tiny one makes `abs` purely relative to the
  /// tensor's own magnitude (the precision policies' tolerances).
  double minScale = 1;
};

/// Tolerances for compiled kernels against the fp64 reference: a few units in
/// the last place of the dtype for floats (sums reassociated by blocking and
/// vectorization included), exact for integers and bool.
Tolerance toleranceFor(DType dtype);

struct Comparison {
  bool ok = true;
  double maxAbsError = 0;
  double maxRelError = 0;
  double scale = 1; ///< the scale the abs term was judged against
  int64_t mismatches = 0;
  int64_t firstMismatch = -1; ///< flat index, -1 when none
  std::string firstMismatchStr; ///< "index 17: got 1.5, expected 1.25"
  /// Where the mismatches lie, for tensors of rank 2 and up (rows flatten every dimension but
  /// the last): "rows 64..127 (64 of 300), columns 0..263 (all 264)"; empty when none. A
  /// wrong tile or edge of a kernel shows as a range.
  std::string mismatchPattern;
};

/// Compares element by element; NaN matches NaN, infinities must match exactly.
/// Shapes and dtypes must already agree (a mismatch is reported as not ok).
Comparison compareTensors(const HostTensor &actual, const HostTensor &expected,
                          Tolerance tolerance);

} // namespace kiln
