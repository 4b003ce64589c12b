// The autotuner on small graphs: budgets, exhaustive sweeps, rejection of a
// wrong candidate, the simulator's device timing path, and a compile with the
// winners against the reference, and repeated runs linking their candidates
// from the kernel cache. Shapes are tiny and runs few: these tests
// check the tuner's logic, not which schedule is fastest.
#include "CompileTestUtil.h"

#include "compiler/GpuModuleCache.h"
#include "compiler/tuner/Tuner.h"
#include "frontend/TempDir.h"
#include "passes/lower/Lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace kiln::test {
namespace {

using tuning::TuneReport;
using tuning::TunerOptions;

/// Quick settings: one warm-up, three timed runs, a small flush.
TunerOptions quickOptions() {
  TunerOptions options;
  options.warmupRuns = 1;
  options.timedRuns = 3;
  options.inputSets = 2;
  options.flushBytes = 1 << 16;
  options.compileThreads = 2;
  options.seed = freshSeed();
  return options;
}

CompileOptions cpuOptions() {
  CompileOptions options;
  options.target = TargetKind::Cpu;
  return options;
}

/// matmul + bias + relu at odd sizes: one contraction group.
void buildDense(CompileCase &c) {
  Tensor a = c.input("a", {37, 53});
  Tensor w = c.param("w", {53, 29});
  c.output("y", relu(matmul(a, w) + c.param("bias", {29})));
}

TuneReport tuneOrFail(const ir::Graph &graph, const CompileOptions &options,
                      const TunerOptions &tunerOptions) {
  auto report = tuning::tuneGraph(graph, options, tunerOptions);
  if (!report)
    FAIL("tuneGraph failed: " << report.error().str());
  return std::move(*report);
}

const tuning::TunedGroup &onlyGroupOfKind(const TuneReport &report, std::string_view kind) {
  const tuning::TunedGroup *found = nullptr;
  for (const tuning::TunedGroup &group : report.groups)
    if (group.kind == kind) {
      REQUIRE(found == nullptr);
      found = &group;
    }
  REQUIRE(found != nullptr);
  return *found;
}

TEST_CASE("the tuner keeps to the trial budget and its winner is valid and no slower than the "
          "default",
          "[compiler][tuner]") {
  CompileCase c("tune_dense");
  buildDense(c);
  REQUIRE(c.graph().finalize());
  TunerOptions options = quickOptions();
  options.maxTrials = 4;
  int progressEvents = 0;
  options.progress = [&](const tuning::TuneProgress &) { ++progressEvents; };
  TuneReport report = tuneOrFail(c.graph().ir(), cpuOptions(), options);

  CHECK(report.candidatesTimed <= 4);
  CHECK(report.candidatesTimed >= 2);
  const tuning::TunedGroup &group = onlyGroupOfKind(report, "contraction");
  CHECK(group.spaceSize > 4);
  CHECK(int(group.candidates.size()) <= 4);
  REQUIRE(group.candidates.size() == group.schedules.size());
  CHECK(group.candidates.front().schedule == group.defaultSchedule);
  REQUIRE(group.winner >= 0);
  const tuning::CandidateTiming &winner = *group.winnerTiming();
  CHECK(winner.valid);
  CHECK(winner.runs == options.timedRuns);
  CHECK(winner.minSeconds <= winner.medianSeconds);
  CHECK(group.defaultSeconds > 0);
  CHECK(winner.medianSeconds <= group.defaultSeconds);
  CHECK(report.speedup() >= 1.0);
  CHECK(progressEvents >= int(group.candidates.size()) + 2);
}

TEST_CASE("the search order gives every family a turn before any family's second",
          "[compiler][tuner]") {
  CompileCase c("search_order");
  c.output("y", conv2d(c.input("x", {2, 8, 12, 12}), c.param("f", {16, 8, 3, 3})));
  REQUIRE(c.graph().finalize());
  CompileOptions options = cpuOptions();
  std::vector<lower::Schedule> space;
  options.chooseSchedule = [&](const ir::Graph &graph, const passes::FusionGroup &group) {
    if (group.kind == passes::GroupKind::Contraction)
      space = lower::scheduleSpace(graph, group, codegen::hostCpuTarget());
    return std::optional<lower::Schedule>{};
  };
  compileOrFail(c.graph().ir(), options);
  REQUIRE(space.size() > 3);
  // Any ranking will do: the reverse of the space's order.
  std::vector<size_t> ranked(space.size());
  for (size_t i = 0; i < ranked.size(); ++i)
    ranked[i] = ranked.size() - 1 - i;
  std::vector<size_t> order = tuning::searchOrder(space, ranked);

  std::vector<size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  REQUIRE(sorted.size() == space.size() - 1);
  for (size_t i = 0; i < sorted.size(); ++i)
    CHECK(sorted[i] == i + 1);
  std::set<int> families; // of the candidates after the default
  for (size_t i = 1; i < space.size(); ++i)
    families.insert(tuning::scheduleFamily(space[i]));
  REQUIRE(families.size() >= 2); // conv2d: two algorithms
  int defaultFamily = tuning::scheduleFamily(space.front());
  // The first picks: one per family, the default's family last among them.
  std::set<int> firstRound;
  for (size_t i = 0; i < order.size() && firstRound.size() < families.size(); ++i) {
    int family = tuning::scheduleFamily(space[order[i]]);
    CHECK(firstRound.insert(family).second);
    if (family == defaultFamily)
      CHECK(firstRound.size() == families.size());
  }
  CHECK(tuning::scheduleFamily(space[order.front()]) != defaultFamily);
  // Within a family, the ranking's order (here: descending index).
  std::map<int, size_t> last;
  for (size_t index : order) {
    int family = tuning::scheduleFamily(space[index]);
    if (last.count(family))
      CHECK(index < last[family]);
    last[family] = index;
  }
}

TEST_CASE("GPU GEMMs on CUDA cores, mma.sync, wgmma, wgmma with tma and persistent are five "
          "families",
          "[compiler][tuner]") {
  lower::GpuMatMulSchedule simt;
  simt.threadM = simt.threadN = 4;
  lower::GpuMatMulSchedule mma = simt;
  mma.warpM = mma.warpN = 32;
  lower::GpuMatMulSchedule wgmma = mma;
  wgmma.warpM = 64;
  wgmma.wgmma = true;
  lower::GpuMatMulSchedule tma = wgmma;
  tma.tma = true;
  lower::GpuMatMulSchedule persistent = tma;
  persistent.persistent = true;
  std::set<int> families;
  for (const auto &s : {simt, mma, wgmma, tma, persistent}) {
    families.insert(tuning::scheduleFamily(lower::Schedule{s}));
    families.insert(tuning::scheduleFamily(lower::Schedule{lower::GpuConv2DSchedule{s}}));
  }
  CHECK(families.size() == 10); // and convolutions apart from matmuls
}

TEST_CASE("a time budget already spent leaves each group its default", "[compiler][tuner]") {
  CompileCase c("tune_budget");
  buildDense(c);
  REQUIRE(c.graph().finalize());
  TunerOptions options = quickOptions();
  options.budgetSeconds = 1e-9;
  options.compileThreads = 1; // nothing compiled beside the default
  TuneReport report = tuneOrFail(c.graph().ir(), cpuOptions(), options);
  REQUIRE(!report.groups.empty());
  for (const tuning::TunedGroup &group : report.groups) {
    CHECK(group.candidates.size() == 1);
    CHECK(group.spaceIndices == std::vector<int>{0});
    CHECK(group.winner == 0);
  }
  // With two compile threads the cost model's first pick is compiled beside
  // the default, at no extra wall time.
  options.compileThreads = 2;
  report = tuneOrFail(c.graph().ir(), cpuOptions(), options);
  for (const tuning::TunedGroup &group : report.groups)
    CHECK(group.candidates.size() == 2);
}

TEST_CASE("an exhaustive sweep times every candidate of the space", "[compiler][tuner]") {
  CompileCase c("tune_pointwise");
  c.output("y", exp(c.input("x", {7, 131})) * 2.0 + 1.0);
  REQUIRE(c.graph().finalize());
  TunerOptions options = quickOptions();
  options.exhaustive = true;
  options.maxTrials = 2; // ignored by a sweep
  options.timedRuns = 1;
  TuneReport report = tuneOrFail(c.graph().ir(), cpuOptions(), options);
  const tuning::TunedGroup &group = onlyGroupOfKind(report, "pointwise");
  CHECK(group.spaceSize > 2);
  CHECK(int(group.candidates.size()) == group.spaceSize);
  for (const tuning::CandidateTiming &candidate : group.candidates) {
    INFO(candidate.schedule << ": " << candidate.note);
    CHECK(candidate.valid);
    CHECK(candidate.runs == 1);
  }
  std::vector<int> indices = group.spaceIndices;
  std::sort(indices.begin(), indices.end());
  for (size_t i = 0; i < indices.size(); ++i)
    CHECK(indices[i] == int(i));
  std::vector<tuning::SweepGroup> sweep = tuning::sweepFrom(report);
  REQUIRE(sweep.size() == report.groups.size());
  CHECK(sweep.front().candidates.size() == group.candidates.size());
  CHECK(sweep.front().key.target == report.targetFingerprint);
  CHECK(sweep.front().key.signature == group.identity.signature);
}

TEST_CASE("a candidate whose output is wrong never wins", "[compiler][tuner]") {
  CompileCase c("tune_wrong");
  buildDense(c);
  REQUIRE(c.graph().finalize());
  TunerOptions options = quickOptions();
  options.maxTrials = 2;

  SECTION("all wrong: no winner, no record") {
    options.onCheckedOutput = [](const lower::Schedule &, HostTensor &output) {
      output.setDouble(output.numElements() / 2, 1e6);
    };
    TuneReport report = tuneOrFail(c.graph().ir(), cpuOptions(), options);
    const tuning::TunedGroup &group = onlyGroupOfKind(report, "contraction");
    CHECK(group.winner == -1);
    for (const tuning::CandidateTiming &candidate : group.candidates) {
      CHECK_FALSE(candidate.valid);
      CHECK(candidate.note.find("differs from the reference") != std::string::npos);
    }
    CHECK(tuning::recordsFrom(report, report.targetFingerprint).empty());
  }
  SECTION("only the default right: the default wins") {
    // The default's text, from a run whose budget is spent on the defaults.
    TunerOptions probe = quickOptions();
    probe.budgetSeconds = 1e-9;
    std::string defaultText =
        onlyGroupOfKind(tuneOrFail(c.graph().ir(), cpuOptions(), probe), "contraction")
            .defaultSchedule;
    options.onCheckedOutput = [&](const lower::Schedule &schedule, HostTensor &output) {
      if (lower::scheduleStr(schedule) != defaultText)
        output.setDouble(0, -1e6);
    };
    TuneReport report = tuneOrFail(c.graph().ir(), cpuOptions(), options);
    const tuning::TunedGroup &group = onlyGroupOfKind(report, "contraction");
    REQUIRE(group.candidates.size() >= 2);
    // scheduleStr does not print every field, so the default's text may name others too.
    REQUIRE(group.winner >= 0);
    CHECK(group.winnerTiming()->schedule == defaultText);
    for (size_t i = 1; i < group.candidates.size(); ++i)
      if (group.candidates[i].schedule != defaultText)
        CHECK_FALSE(group.candidates[i].valid);
    std::vector<tuning::TuningRecord> records = tuning::recordsFrom(report, "fingerprint-x");
    REQUIRE(records.size() == 1);
    CHECK(records.front().schedule == defaultText);
    CHECK(records.front().key.target == "fingerprint-x");
    CHECK(records.front().candidatesTimed == int(group.candidates.size()));
    CHECK(records.front().bestSeconds == group.winnerTiming()->medianSeconds);
    CHECK(records.front().defaultSeconds == group.defaultSeconds);
    CHECK(records.front().tunedAt.size() == 20); // 2026-11-26T14:00:00Z
  }
}

TEST_CASE("on the simulator the tuner times candidates through the device's events",
          "[compiler][tuner]") {
  CompileCase c("tune_sim");
  c.output("p", softmax(c.input("x", {5, 40})));
  REQUIRE(c.graph().finalize());
  CompileOptions compileOptions;
  compileOptions.target = TargetKind::Sim;
  TunerOptions options = quickOptions();
  options.maxTrials = 2;
  options.timedRuns = 2;
  options.flushBytes = 4096;
  TuneReport report = tuneOrFail(c.graph().ir(), compileOptions, options);
  CHECK(report.target.find("sim") == 0);
  CHECK(report.targetFingerprint.find("sm_90a") != std::string::npos);
  REQUIRE(!report.groups.empty());
  const tuning::TunedGroup &group = report.groups.front();
  CHECK(group.defaultSchedule.find("gpu.") == 0);
  REQUIRE(group.candidates.size() == 2);
  for (const tuning::CandidateTiming &candidate : group.candidates) {
    INFO(candidate.schedule << ": " << candidate.note);
    CHECK(candidate.valid);
    CHECK(candidate.runs == 2);
    CHECK(candidate.medianSeconds > 0);
  }
}

TEST_CASE("a model compiled with the tuner's winners matches the reference",
          "[compiler][tuner]") {
  CompileCase c("tune_then_compile");
  Tensor a = c.input("a", {19, 45});
  Tensor h = relu(matmul(a, c.param("w", {45, 23})) + c.param("bias", {23}));
  c.output("p", softmax(h));
  Tensor image = c.input("image", {2, 3, 9, 11});
  c.output("features", relu(conv2d(image, c.param("f", {5, 3, 3, 3}))));
  REQUIRE(c.graph().finalize());
  TunerOptions options = quickOptions();
  options.maxTrials = 7;
  TuneReport report = tuneOrFail(c.graph().ir(), cpuOptions(), options);
  REQUIRE(report.groups.size() >= 3);
  CHECK(report.candidatesTimed <= 7);

  CompileOptions compileOptions = cpuOptions();
  auto chooser = tuning::winnersAsScheduleChooser(report);
  int chosen = 0;
  std::set<std::string> chosenTexts;
  compileOptions.chooseSchedule = [&](const ir::Graph &graph, const passes::FusionGroup &group) {
    std::optional<lower::Schedule> schedule = chooser(graph, group);
    if (schedule) {
      ++chosen;
      chosenTexts.insert(lower::scheduleStr(*schedule));
    }
    return schedule;
  };
  c.check(compileOptions);
  CHECK(chosen == int(report.groups.size()));
  for (const tuning::TunedGroup &group : report.groups)
    CHECK(chosenTexts.count(group.winnerTiming()->schedule) == 1);
}

} // namespace
} // namespace kiln::test

namespace kiln::test {

TEST_CASE("a repeated tuning run links its CPU candidates from the kernel cache",
          "[compiler][tuner]") {
  CompileCase c("tune_cached");
  buildDense(c);
  REQUIRE(c.graph().finalize());
  kiln::testing::TempDir dir;
  CompileOptions options = cpuOptions();
  options.kernelCacheDir = dir.path().string();
  TunerOptions tunerOptions = quickOptions();
  tunerOptions.maxTrials = 3;
  runtime::KernelCache &cache = compiler::kernelCacheFor(options);

  runtime::KernelCacheStats before = cache.stats();
  TuneReport first = tuneOrFail(c.graph().ir(), options, tunerOptions);
  runtime::KernelCacheStats afterFirst = cache.stats();
  // Each candidate compiled once and stored; two schedules that lower to the
  // same kernel (blocks clamped to the problem) share one entry.
  int64_t stored = afterFirst.writes - before.writes;
  CHECK(stored >= 1);
  CHECK(stored + (afterFirst.memoryHits - before.memoryHits) == first.candidatesTimed);

  TuneReport second = tuneOrFail(c.graph().ir(), options, tunerOptions);
  runtime::KernelCacheStats afterSecond = cache.stats();
  CHECK(second.candidatesTimed == first.candidatesTimed);
  CHECK(afterSecond.memoryHits - afterFirst.memoryHits == second.candidatesTimed);
  CHECK(afterSecond.writes == afterFirst.writes);

  // With the cache off, every candidate is compiled again and nothing is stored.
  options.useKernelCache = false;
  TuneReport uncached = tuneOrFail(c.graph().ir(), options, tunerOptions);
  CHECK(uncached.candidatesTimed == first.candidatesTimed);
  CHECK(cache.stats().writes == afterSecond.writes);
  CHECK(cache.stats().memoryHits == afterSecond.memoryHits);
}

} // namespace kiln::test
