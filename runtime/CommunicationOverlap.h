// How much of a run's communication the compute hid: the one definition of
// the "hidden" fraction that `kiln train --profile` and the profile table
// print (docs/profiling.md).
#pragma once

#include "runtime/Profile.h"

#include <optional>
#include <span>

namespace kiln::runtime {

/// The collectives of some runs against their compute.
struct CommunicationOverlap {
  int collectives = 0;
  double communicationMs = 0; ///< the collectives' durations, summed
  double hiddenMs = 0;        ///< the part of them during which a kernel ran
  /// hiddenMs / communicationMs; nullopt without communication time.
  std::optional<double> hiddenFraction() const;
};

/// Over every run: each Communication event's time overlapped by the run's
/// compute (Kernel and Graph events, their union), against its duration.
/// Events are compared within their own run only.
CommunicationOverlap measureCommunicationOverlap(std::span<const RunProfile> runs);

} // namespace kiln::runtime
