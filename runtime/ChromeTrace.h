// The Chrome trace-event timeline of profiled runs (chrome://tracing, Perfetto):
// the JSON and its atomic write.
#pragma once

#include "runtime/LaunchPlan.h"
#include "runtime/Profile.h"
#include "support/Error.h"

#include <span>
#include <string>
#include <string_view>

namespace kiln::runtime {

/// The runs as Chrome trace-event JSON: one complete ("X") event per kernel,
/// copy and launch-graph replay, with its work and achieved rates as args,
/// and one per collective on a "communication" thread (cat "comm", args
/// step, bytes, elements), runs laid end to end on a shared clock in
/// microseconds.
std::string chromeTraceJson(std::span<const RunProfile> runs, std::span<const PlanStep> steps);

/// Writes chromeTraceJson to `path` through a temporary file in the same
/// directory renamed into place, so a failed write leaves no half-written
/// trace (and no temporary). Errors name `path`.
Expected<void> writeChromeTrace(const std::string &path, std::span<const RunProfile> runs,
                                std::span<const PlanStep> steps);

} // namespace kiln::runtime
