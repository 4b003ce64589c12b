// What the tuning database stores: the schedule chosen for one fusion group
// on one target, and the timings a tuning run or a sweep measured. Plain data,
// in kiln_rt (a bundle carries records; loading one needs no compiler).
#pragma once

#include <string>
#include <vector>

namespace kiln::tuning {

/// Identifies the group a record is for. `signature` is the group's canonical
/// text without its shapes (ops, dtypes, attributes, how values flow), so a
/// sweep can query one kind of kernel across shapes; `shapes` is the shapes
/// alone; `target` the target fingerprint (exact sm, SM count, driver,
/// toolkit and cuDNN versions; or the CPU's triple, name, features, cores);
/// `kilnVersion` the kiln that tuned it.
struct TuningKey {
  std::string signature;
  std::string shapes;
  std::string target;
  std::string kilnVersion;

  bool operator==(const TuningKey &) const = default;
};

/// One candidate's measurement. `schedule` is lower::scheduleStr text (parsed
/// back by lower::parseSchedule) or, for a library call, the library's
/// configuration text; `backend` is "kiln" for a generated kernel or the
/// library ("cudnn").
struct CandidateTiming {
  std::string schedule;
  std::string backend = "kiln";
  double medianSeconds = 0; ///< median of the timed runs (0 when not timed)
  double minSeconds = 0;
  int runs = 0;
  /// False when the candidate failed to compile or run, or its output did not
  /// match the reference: such a candidate never wins. `note` says why.
  bool valid = true;
  std::string note;
};

/// The schedule chosen for a group on a target.
struct TuningRecord {
  TuningKey key;
  std::string schedule;       ///< the winner (CandidateTiming::schedule)
  std::string backend = "kiln";
  double bestSeconds = 0;     ///< the winner's median
  double defaultSeconds = 0;  ///< the heuristic default's median, for comparison (0: not timed)
  int candidatesTimed = 0;
  std::string summary;        ///< one line for people: "contraction matmul+add+relu 64x800 * 800x500"
  std::string tunedAt;        ///< UTC, ISO 8601
};

/// Every candidate a sweep timed for one group, for research: exported as CSV
/// and JSON and plotted.
struct SweepGroup {
  TuningKey key;
  std::string summary;
  std::vector<CandidateTiming> candidates;
};

} // namespace kiln::tuning
