// kiln tune: autotunes a model's fusion groups on a target and stores the
// winners in the tuning database (docs/tuning.md).
#include "compiler/SizeBucketCompile.h"
#include "compiler/tuner/SweepExport.h"
#include "compiler/tuner/TuneProgressBar.h"
#include "compiler/tuner/Tuner.h"
#include "runtime/cache/AtomicFile.h"
#include "runtime/tuning/TuningDatabase.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelSource.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>

namespace kiln::tool {

namespace {

constexpr const char *kTuneHelp = R"(usage: kiln tune <model> [options]

Times the candidate schedules of every fusion group of a model on the target,
checks each candidate's output against the fp64 reference, keeps the fastest
valid one and stores it in the tuning database, which `kiln compile`, `kiln run`
and `kiln aot` then use for the same groups on the same target. See
docs/tuning.md.

<model> is a graph IR file (.kir), an ONNX model (.onnx; --shape NAME=D0,D1,...
fixes each input dim it leaves open) or example:<name>; the examples are:
{}
options:
{}  --budget T          search time: 90, 90s, 5m (default 60s); the groups share it
  --trials N          at most N candidates timed in all (default: no limit)
  --sweep             time every candidate of every group (the budget and trials
                      are ignored); the sweep is stored in the database too
  --runs N            timed runs per candidate, the median ranks them (default 5)
  --csv FILE          write every timed candidate as CSV
  --json FILE         ... as JSON
  --svg FILE          ... as an SVG plot of time against configuration
  --sort-by FIELD     the plot's order: time (default) or a schedule field (kc, nc...)
  --db PATH           the tuning database (default: $KILN_TUNING_DB, else
                      tuning.sqlite in the kernel cache directory)
  --dry-run           time and report, but write nothing to the database
  --size-buckets B    a model with a size symbol: its size buckets, each tuned
                      (sharing the budget): pow2 (default), none or a LIST, as
                      `kiln run --size-buckets` (docs/dynamic-shapes.md)
  --batch N           batch size of an example (default: the example's)
  --seed N            seeds the random inputs (default 1)
  --help              print this help and exit
)";

/// "90", "90s", "5m", "1.5h" in seconds.
Expected<double> parseDuration(const std::string &text) {
  double scale = 1;
  std::string number = text;
  if (!number.empty() && (number.back() == 's' || number.back() == 'm' || number.back() == 'h')) {
    scale = number.back() == 'm' ? 60 : number.back() == 'h' ? 3600 : 1;
    number.pop_back();
  }
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(number, &used);
  } catch (...) {
    used = 0;
  }
  if (number.empty() || used != number.size() || !(value > 0))
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("--budget expects a positive duration such as 90s or 5m, got '{}'",
                                 text));
  return value * scale;
}

/// tuneGraph over every size bucket a compile of `graph` makes (docs/dynamic-shapes.md): each
/// bucket's groups have records of their own, and the buckets share the budget. One report.
Expected<tuning::TuneReport> tuneBuckets(const ir::Graph &graph, const CompileOptions &options,
                                         tuning::TunerOptions tuner) {
  KILN_TRY(std::vector<int64_t> bounds, compiler::sizeBucketBounds(graph, options.sizeBuckets));
  if (bounds.size() == 1)
    return tuning::tuneGraph(graph, options, tuner);
  tuner.budgetSeconds /= static_cast<double>(bounds.size());
  tuning::TuneReport report;
  for (int64_t bound : bounds) {
    KILN_TRY(std::unique_ptr<ir::Graph> bucket, compiler::sizeBucketGraph(graph, bound));
    KILN_TRY(tuning::TuneReport part, tuning::tuneGraph(*bucket, options, tuner));
    report.target = part.target;
    report.targetFingerprint = part.targetFingerprint;
    std::ranges::move(part.groups, std::back_inserter(report.groups));
    report.seconds += part.seconds;
    report.setupSeconds += part.setupSeconds;
    report.candidatesTimed += part.candidatesTimed;
    report.defaultSecondsTotal += part.defaultSecondsTotal;
    report.bestSecondsTotal += part.bestSecondsTotal;
  }
  return report;
}

void printReport(const tuning::TuneReport &report) {
  fmt::print("target:  {}\n", report.target);
  fmt::print("{:<56} {:>10} {:>10} {:>7}  {}\n", "group", "default", "best", "speedup",
             "schedule");
  for (const tuning::TunedGroup &group : report.groups) {
    const tuning::CandidateTiming *best = group.winnerTiming();
    std::string summary = group.identity.summary;
    if (summary.size() > 56)
      summary = summary.substr(0, 53) + "...";
    if (!best) {
      fmt::print("{:<56} {:>10} {:>10} {:>7}  no valid candidate\n", summary,
                 tuning::formatSeconds(group.defaultSeconds), "-", "-");
      continue;
    }
    double speedup = best->medianSeconds > 0 ? group.defaultSeconds / best->medianSeconds : 1;
    fmt::print("{:<56} {:>10} {:>10} {:>6.2f}x  {}{}\n", summary,
               tuning::formatSeconds(group.defaultSeconds),
               tuning::formatSeconds(best->medianSeconds), speedup, best->schedule,
               best->backend == "kiln" ? "" : fmt::format(" ({})", best->backend));
  }
  fmt::print("tuned {} groups, {} candidates timed in {:.1f} s; the groups' time "
             "{} -> {} ({:.2f}x)\n",
             report.groups.size(), report.candidatesTimed, report.seconds,
             tuning::formatSeconds(report.defaultSecondsTotal),
             tuning::formatSeconds(report.bestSecondsTotal), report.speedup());
}

Expected<void> writeExports(const Args &args, const tuning::TuneReport &report) {
  std::vector<tuning::SweepGroup> sweep = tuning::sweepFrom(report);
  if (auto path = args.value("--csv"))
    KILN_TRY_VOID(runtime::replaceFile(*path, tuning::sweepCsv(sweep)));
  if (auto path = args.value("--json"))
    KILN_TRY_VOID(runtime::replaceFile(*path, tuning::sweepJson(sweep)));
  if (auto path = args.value("--svg")) {
    tuning::SweepPlotOptions plot;
    plot.sortBy = args.value("--sort-by").value_or("time");
    KILN_TRY_VOID(runtime::replaceFile(*path, tuning::sweepSvg(sweep, plot)));
  }
  return {};
}

/// The database the results go to, opened before any timing so that a bad
/// --db loses no work.
Expected<tuning::TuningDatabase> openDatabase(const Args &args) {
  std::string path = args.value("--db").value_or(tuning::TuningDatabase::defaultPath());
  if (path.empty())
    return makeError(ErrorCode::NotFound,
                     "no tuning database path: set --db, $KILN_TUNING_DB or $HOME");
  return tuning::TuningDatabase::open(path);
}

/// The export files' directories must exist before the timing starts: the
/// files are written after it.
Expected<void> checkExportPaths(const Args &args) {
  for (const char *flag : {"--csv", "--json", "--svg"}) {
    auto path = args.value(flag);
    if (!path)
      continue;
    std::filesystem::path directory = std::filesystem::absolute(*path).parent_path();
    std::error_code error;
    if (!std::filesystem::is_directory(directory, error))
      return makeError(ErrorCode::IOError,
                       fmt::format("{} {}: the directory '{}' does not exist", flag, *path,
                                   directory.string()));
  }
  return {};
}

/// Stores the winners (and, for a sweep, every candidate) in the database.
Expected<void> store(const Args &args, tuning::TuningDatabase &database,
                     const tuning::TuneReport &report, const std::string &label) {
  std::string path = database.path();
  std::vector<tuning::TuningRecord> records = tuning::recordsFrom(report, report.targetFingerprint);
  for (const tuning::TuningRecord &record : records)
    KILN_TRY_VOID(database.put(record));
  std::string sweepNote;
  if (args.has("--sweep")) {
    KILN_TRY(int64_t sweepId, database.addSweep(label, tuning::sweepFrom(report)));
    sweepNote = fmt::format(" and sweep {}", sweepId);
  }
  fmt::print("stored {} records{} in {}\n", records.size(), sweepNote, path);
  return {};
}

} // namespace

int tuneCommand(const std::vector<std::string> &words) {
  std::set<std::string> valued = kTargetFlags;
  valued.insert({"--budget", "--trials", "--runs", "--csv", "--json", "--svg", "--sort-by",
                 "--db", "--batch", "--seed"});
  valued.insert({"--shape", "--size-buckets"});
  auto args = parseCommandArgs("tune", words, valued, {"--help", "--sweep", "--dry-run"});
  if (!args)
    return kExitUsage;
  if (args->has("--help")) {
    fmt::print(kTuneHelp, exampleListing(), kTargetHelp);
    return kExitOk;
  }
  if (args->positional().size() != 1)
    return usageErrorWithHelp("tune",
                              fmt::format("expected one model, got {}", args->positional().size()));
  CompileOptions options;
  tuning::TunerOptions tuner;
  auto target = parseTargetOptions(*args, options);
  auto budget = parseDuration(args->value("--budget").value_or("60s"));
  auto trials = args->intValue("--trials", 0, 1);
  auto runs = args->intValue("--runs", 5, 1);
  auto batch = args->intValue("--batch", 0, 1);
  auto seed = args->intValue("--seed", 1, 0);
  if (const Error *error = firstError(target, budget, trials, runs, batch, seed))
    return usageError("tune", error->message());
  if (auto sortBy = args->value("--sort-by"); sortBy && !args->has("--svg"))
    return usageError("tune", "--sort-by orders the --svg plot: give --svg too");
  // A tuning run measures the heuristic defaults against the space: records
  // already in the database must not choose the schedules it starts from.
  options.tuning = TuningMode::Off;
  if (options.target == TargetKind::Auto)
    options.target = TargetKind::Cpu;
  if (auto buckets = args->value("--size-buckets")) {
    auto bounds = parseSizeBuckets(*buckets);
    if (!bounds)
      return usageError("tune", bounds.error().message());
    options.sizeBuckets = *bounds;
  }
  tuner.budgetSeconds = *budget;
  tuner.maxTrials = static_cast<int>(*trials);
  tuner.timedRuns = static_cast<int>(*runs);
  tuner.exhaustive = args->has("--sweep");
  tuner.seed = static_cast<uint64_t>(*seed);
  tuning::TuneProgressBar bar(std::cerr, tuning::TuneProgressBar::isTerminal(stderr));
  tuner.progress = [&bar](const tuning::TuneProgress &event) { bar(event); };

  const std::string &spec = args->positional()[0];
  auto shapes = parseShapeFlags(*args);
  if (!shapes)
    return usageError("tune", shapes.error().message());
  if (auto usable = checkModelSpec(spec, *batch, *shapes); !usable)
    return usageError("tune", usable.error().message());
  auto model = loadModel(spec, *batch, 0, *shapes);
  if (!model)
    return reportError("tune", model.error());
  if (auto exports = checkExportPaths(*args); !exports)
    return reportError("tune", exports.error());
  std::optional<tuning::TuningDatabase> database;
  if (!args->has("--dry-run")) {
    auto opened = openDatabase(*args);
    if (!opened)
      return reportError("tune", opened.error());
    database = std::move(*opened);
  }
  auto report = tuneBuckets(*model->graph, options, tuner);
  if (!report)
    return reportError("tune", report.error());
  printReport(*report);
  if (auto written = writeExports(*args, *report); !written)
    return reportError("tune", written.error());
  if (database)
    if (auto stored = store(*args, *database, *report, spec); !stored)
      return reportError("tune", stored.error());
  return kExitOk;
}

} // namespace kiln::tool
