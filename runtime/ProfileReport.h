// What `kiln run --profile` prints: run profiles aggregated per kernel against
// the launch plan's counted work and a device's peak, and formatted as a table.
#pragma once

#include "runtime/CommunicationOverlap.h"
#include "runtime/Device.h"
#include "runtime/LaunchPlan.h"
#include "runtime/Profile.h"
#include "support/Error.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::runtime {

/// Which peak a kernel is closer to. The larger of the two achieved fractions
/// of peak names it; since both fractions share the kernel's time, this is the
/// roofline's answer too (memory when FLOPs / bytes is below peak FLOP/s /
/// peak bytes/s).
enum class Bound { Unknown, Memory, Compute };

std::string_view boundName(Bound bound);

/// One kernel's line of the report, or a launch-graph replay's (step -1: the
/// whole plan's work in one event).
struct KernelProfileRow {
  int step = -1;
  std::string name;
  int64_t calls = 0;
  double totalMs = 0;
  double meanMs = 0;
  double fractionOfRun = 0;  ///< totalMs over the runs' wall time
  int64_t bytesPerCall = 0;  ///< PlanStep::bytesMoved
  int64_t flopsPerCall = 0;  ///< PlanStep::flops
  double bytesPerSecond = 0; ///< achieved: bytes of every call over totalMs (0 when no time)
  double flopsPerSecond = 0;
  /// Achieved over peak; nullopt when the peak is unknown or no time was measured.
  std::optional<double> fractionOfPeakBandwidth, fractionOfPeakFlops;
  Bound bound = Bound::Unknown;
};

/// One kind of copy (by category and name), over every run.
struct CopyProfileRow {
  ProfileCategory category = ProfileCategory::CopyToDevice;
  std::string name;
  int64_t calls = 0;
  double totalMs = 0;
  double meanMs = 0;
  double fractionOfRun = 0;
  int64_t bytes = 0; ///< over every call
  double bytesPerSecond = 0;
  std::optional<double> fractionOfPeakBandwidth;
};

/// Run profiles summed up. Rows are in a deterministic order: kernels by
/// total time descending, ties by step; copies to the device before copies to
/// the host, then by name.
struct ProfileSummary {
  std::string device;
  DevicePeak peak;
  int runs = 0;
  double totalMs = 0;  ///< the runs' wall time, summed
  double kernelMs = 0; ///< kernel and launch-graph events, summed
  double copyMs = 0;
  std::vector<KernelProfileRow> kernels;
  std::vector<CopyProfileRow> copies;
  /// The collectives (host runs of a program with all_reduce across ranks)
  /// and how much of their time the kernels hid.
  CommunicationOverlap communication;
};

/// Aggregates `runs` (of one model) per kernel. `steps` are the model's launch
/// plan steps, whose counted work each Kernel event's step refers to; an event
/// whose step is out of range keeps its name and counts no work.
ProfileSummary summarizeProfiles(std::span<const RunProfile> runs,
                                 std::span<const PlanStep> steps, const DevicePeak &peak);

/// A fixed-width table of the summary: a header with the device and its peak,
/// one line per kernel, the copies, a total line, and with collectives a
/// communication line (their time and the fraction hidden behind kernels).
/// Deterministic for a given summary.
std::string formatProfileTable(const ProfileSummary &summary);

/// "comm:    12.000 ms in 4 all-reduces, 75.0% hidden behind kernels (3.000 ms
/// exposed)": the line the table and `kiln train --profile` print.
std::string formatCommunicationLine(const CommunicationOverlap &overlap);

} // namespace kiln::runtime
