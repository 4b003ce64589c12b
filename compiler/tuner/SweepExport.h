// Sweeps for research: every timed candidate of every group as CSV, JSON and
// an SVG plot (docs/tuning.md, "Sweeps"). Files are written atomically.
#pragma once

#include "runtime/tuning/TuningRecord.h"
#include "support/Error.h"

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::tuning {

/// The `key=value` fields of a schedule's text, in order ("matmul mc=96 nc=512"
/// gives {mc, 96}, {nc, 512}); words without '=' are skipped.
std::vector<std::pair<std::string, std::string>> scheduleFields(std::string_view schedule);

/// One row per candidate: group, summary, signature, shapes, target,
/// kiln_version, candidate (its index in the group), schedule, backend, one
/// column per schedule field seen in any row (empty where a schedule lacks
/// it), median_s, min_s, runs, valid, note. RFC 4180 quoting.
std::string sweepCsv(std::span<const SweepGroup> sweep);

/// {"groups": [{"summary", "signature", "shapes", "target", "kiln_version",
/// "candidates": [{"schedule", "backend", "fields": {...}, "median_s",
/// "min_s", "runs", "valid", "note"}]}]}.
std::string sweepJson(std::span<const SweepGroup> sweep);

struct SweepPlotOptions {
  /// "time" sorts each group's candidates by median time; a schedule field
  /// ("kc", "bm", ...) sorts them by that field's value (numerically where it
  /// is a number), then by time.
  std::string sortBy = "time";
};

/// One panel per group: median time (log scale, in the unit that suits the
/// group) against the candidates in the chosen order; one mark per candidate
/// (class "candidate"; invalid ones drawn on the top edge), the default
/// (candidate 0, as sweepFrom orders them) ringed, the winner (fastest valid)
/// starred.
std::string sweepSvg(std::span<const SweepGroup> sweep, const SweepPlotOptions &options = {});

/// The fastest valid candidate of `group` (-1 when none).
int sweepWinner(const SweepGroup &group);

/// "1.23 ms", "45.6 us", "2.00 s".
std::string formatSeconds(double seconds);

} // namespace kiln::tuning
