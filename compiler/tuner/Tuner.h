// The autotuner: times the candidate schedules of every fusion group of a
// graph on its target, checks each against the fp64 reference, and keeps the
// fastest valid one (docs/tuning.md, "The autotuner"). Its results are
// schedules and timings, never binaries; the tuning database stores them.
#pragma once

#include "compiler/Compile.h"
#include "compiler/tuning/TuningKeys.h"
#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/Schedule.h"
#include "runtime/tuning/TuningRecord.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln::tuning {

/// What the tuner tells its caller while it works (for a progress bar).
struct TuneProgress {
  enum class Kind {
    GroupStarted,  ///< a group's candidates are about to be timed
    CandidateDone, ///< one more candidate was timed (or failed)
    GroupFinished, ///< the group's winner is chosen
  };
  Kind kind = Kind::GroupStarted;
  int groupIndex = 0; ///< 0-based, among the groups being tuned
  int groupCount = 0;
  std::string groupSummary; ///< "contraction matmul+add+relu 37x53 * 53x29"
  int candidatesDone = 0;
  int candidatesPlanned = 0; ///< this group's share of the budget (all, when exhaustive)
  double bestSeconds = 0;    ///< the fastest valid median so far (0: none yet)
};

struct TunerOptions {
  /// Wall-clock seconds for the search (compiles, checks, timed runs), split
  /// across groups by the time of their defaults; each group's one-off setup
  /// (random inputs, the reference) is not counted. 0: no time limit.
  double budgetSeconds = 0;
  /// Whole run: candidates timed, every group's default included (a group
  /// always times its default, even past the budget). 0: no limit.
  int maxTrials = 0;
  /// Time every candidate of every space (a sweep); the budgets are ignored.
  bool exhaustive = false;
  /// Untimed runs first. A freshly loaded CPU kernel needs a few: the pool's
  /// workers grow their scratch memory on first use (measured: with one
  /// warm-up the first candidate of a run read 1.3 ms where it takes 0.3 ms).
  int warmupRuns = 3;
  /// Timed runs per candidate; the median is what ranks them.
  int timedRuns = 5;
  /// Input sets cycled through the timed runs, so the timed data is not hot.
  int inputSets = 3;
  /// Bytes touched between runs to evict the caches (the CPU's last level, a
  /// GPU's L2): -1 picks twice the target's cache (at most 64 MiB on the
  /// CPU), 0 flushes nothing.
  int64_t flushBytes = -1;
  /// Threads compiling candidates at once (CPU target; device targets load
  /// one at a time). 0: min(4, hardware threads). Without a trial limit the
  /// cost model's first compileThreads - 1 picks are compiled beside each
  /// group's default.
  int compileThreads = 0;
  /// Seeds the random inputs.
  uint64_t seed = 1;
  std::function<void(const TuneProgress &)> progress;
  /// Test hook: called with each candidate's output of its checked run
  /// before it is compared with the reference (a test corrupts it to prove a
  /// wrong candidate never wins).
  std::function<void(const lower::Schedule &, HostTensor &output)> onCheckedOutput;
};

/// One tuned group.
struct TunedGroup {
  int groupId = 0;            ///< FusionGroup::id in the tuned pipeline's plan
  GroupIdentity identity;     ///< what the tuning database keys it by
  std::string kind;           ///< passes::groupKindName
  std::string defaultSchedule; ///< scheduleStr of the heuristic default
  double defaultSeconds = 0;  ///< its median (0 when it failed)
  /// Every timed candidate in the order timed (the default first). A
  /// library's candidate (cuDNN, on a CUDA device) comes last, with its
  /// backend; `schedules` keeps each exact schedule (NoSchedule for a library).
  std::vector<CandidateTiming> candidates;
  std::vector<lower::Schedule> schedules; ///< parallel to `candidates`
  /// Parallel to `candidates`: each one's index in the group's schedule space
  /// (deterministic for a graph and target, so two runs can be matched); -1
  /// for a library's candidate.
  std::vector<int> spaceIndices;
  int spaceSize = 0;          ///< candidates in the group's whole space
  /// Index into `candidates` of the fastest valid one; -1 when none is valid.
  int winner = -1;

  const CandidateTiming *winnerTiming() const {
    return winner < 0 ? nullptr : &candidates[static_cast<size_t>(winner)];
  }
};

struct TuneReport {
  std::string target;            ///< "cpu x86_64-pc-linux-gnu znver4 ...", "sim sm_90a"
  std::string targetFingerprint; ///< tuning::targetFingerprint of that target
  std::vector<TunedGroup> groups; ///< groups with more than one candidate, in launch order
  double seconds = 0;            ///< the whole run
  double setupSeconds = 0;       ///< of which the groups' inputs and references
  int candidatesTimed = 0;
  double defaultSecondsTotal = 0; ///< sum of the groups' default medians
  double bestSecondsTotal = 0;    ///< sum of the winners' medians
  /// defaultSecondsTotal / bestSecondsTotal (1 when nothing was tuned).
  double speedup() const {
    return bestSecondsTotal > 0 ? defaultSecondsTotal / bestSecondsTotal : 1.0;
  }
};

/// Tunes every group of `graph` with more than one candidate schedule on
/// options.target (cpu, sim, or cuda; auto means cpu here, since tuning a
/// model for one machine should name it). The groups are exactly those
/// compile() makes with the same options.
Expected<TuneReport> tuneGraph(const ir::Graph &graph, const CompileOptions &options,
                               const TunerOptions &tunerOptions);

/// A schedule's family: what changes a kernel's whole structure (conv2d's
/// algorithm, a CPU GEMM's parallel mode, a GPU GEMM's CUDA cores, mma.sync or
/// wgmma), across which the cost model is least sure.
int scheduleFamily(const lower::Schedule &schedule);

/// The order the candidates after the default (space[0]) are timed in, from
/// the cost model's ranking of the whole space: the families take turns, each
/// giving its candidates in the model's order, the families ordered by their
/// best candidate's rank except that the default's goes last (the default
/// already speaks for it). A small budget so sees every family's best guess
/// before any family's second.
std::vector<size_t> searchOrder(const std::vector<lower::Schedule> &space,
                                const std::vector<size_t> &ranked);

/// A chooseSchedule hook that gives each tuned group its winner (matched by
/// the group's identity), and the default to every other group.
std::function<std::optional<lower::Schedule>(const ir::Graph &, const passes::FusionGroup &)>
winnersAsScheduleChooser(const TuneReport &report);

/// One record per group with a winner, keyed for `targetFingerprint`, stamped now.
std::vector<TuningRecord> recordsFrom(const TuneReport &report,
                                      const std::string &targetFingerprint);

/// Every timed candidate of every group, keyed with the report's fingerprint.
std::vector<SweepGroup> sweepFrom(const TuneReport &report);

} // namespace kiln::tuning
