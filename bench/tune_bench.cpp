// kiln_tune_bench: how well the autotuner searches on the CPU. For GEMM and
// conv2d shapes it runs an exhaustive sweep of each group's schedule space,
// then the tuner with a budget of a tenth of the sweep's search time, and
// compares the best times found and the time spent. Prints a Markdown table
// and writes it, with the machine, date and commit, to
// bench/results/tune-cpu-<date>-<commit>.md.
#include "RunInfo.h"
#include "compiler/tuning/Tuner.h"
#include "compiler/tuning/SweepExport.h"
#include "runtime/cache/AtomicFile.h"
#include "compiler/tuning/TuneProgressBar.h"
#include "frontend/Graph.h"
#include "frontend/Ops.h"
#include "runtime/cpu/ThreadPool.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace {

using namespace kiln;
namespace fs = std::filesystem;

/// The tuner's budget as a fraction of the sweep's search time.
constexpr double kBudgetFraction = 0.10;

struct Workload {
  std::string name;
  std::function<void(Graph &)> build;
};

Workload gemm(int64_t m, int64_t k, int64_t n) {
  return {fmt::format("matmul_{}x{}x{}", m, k, n), [=](Graph &g) {
            Tensor a = g.input("a", {m, k});
            Tensor b = g.input("b", {k, n});
            g.output("c", matmul(a, b));
          }};
}

/// A 3x3 conv2d, NCHW, its filter an input (as in kiln_cpu_bench).
Workload conv(std::string name, int64_t batch, int64_t inChannels, int64_t outChannels,
              int64_t imageSize, int64_t pad) {
  return {std::move(name), [=](Graph &g) {
            Tensor x = g.input("x", {batch, inChannels, imageSize, imageSize});
            Tensor w = g.input("w", {outChannels, inChannels, 3, 3});
            Conv2DOptions options;
            options.padding = Padding::symmetric(pad, pad);
            g.output("y", conv2d(x, w, options));
          }};
}

/// GEMMs (M x K x N): square ones, a wide one and GPT-2 small's MLP up
/// projection at 128 tokens; the CNN's convs and VGG16's first and last
/// blocks' (the kiln_cpu_bench shapes that fit a few minutes on two cores).
std::vector<Workload> workloads() {
  return {gemm(256, 256, 256),
          gemm(512, 1024, 768),
          gemm(1024, 1024, 1024),
          gemm(128, 768, 3072),
          conv("conv_cnn1", 64, 1, 32, 28, 0),
          conv("conv_cnn2", 64, 32, 64, 13, 0),
          conv("conv_cnn3", 64, 64, 64, 5, 0),
          conv("conv_vgg1_1", 1, 3, 64, 224, 1),
          conv("conv_vgg5_1", 1, 512, 512, 14, 1)};
}

struct Row {
  std::string name, summary;
  int space = 0, tunerTimed = 0;
  double defaultSeconds = 0, exhaustiveBest = 0, tunerBest = 0;
  double pickInSweep = 0; ///< the tuner's winner as the sweep timed it
  double exhaustiveSearch = 0, tunerSearch = 0, exhaustiveTotal = 0, tunerTotal = 0;
  std::string winner, error;
};

Expected<tuning::TuneReport> tune(const ir::Graph &graph, tuning::TunerOptions options) {
  CompileOptions compileOptions;
  compileOptions.target = TargetKind::Cpu;
  tuning::TuneProgressBar bar(std::cerr, tuning::TuneProgressBar::isTerminal(stderr));
  options.progress = [&bar](const tuning::TuneProgress &event) { bar(event); };
  return tuning::tuneGraph(graph, compileOptions, options);
}

/// The one tuned group's figures (each workload is a single group).
Row measure(const Workload &workload, int timedRuns, const std::string &sweepDir) {
  Row row;
  row.name = workload.name;
  Graph graph(workload.name, 1);
  workload.build(graph);
  if (auto finalized = graph.finalize(); !finalized) {
    row.error = finalized.error().message();
    return row;
  }
  tuning::TunerOptions options;
  options.warmupRuns = 3;
  options.timedRuns = timedRuns;
  options.inputSets = 3;

  options.exhaustive = true;
  auto sweep = tune(graph.ir(), options);
  if (!sweep || sweep->groups.empty() || sweep->groups.front().winner < 0) {
    row.error = sweep ? "no valid candidate" : sweep.error().message();
    return row;
  }
  const tuning::TunedGroup &all = sweep->groups.front();
  row.summary = all.identity.summary;
  row.space = all.spaceSize;
  row.defaultSeconds = all.defaultSeconds;
  row.exhaustiveBest = all.winnerTiming()->medianSeconds;
  row.exhaustiveSearch = sweep->seconds - sweep->setupSeconds;
  row.exhaustiveTotal = sweep->seconds;
  if (!sweepDir.empty()) {
    std::vector<tuning::SweepGroup> groups = tuning::sweepFrom(*sweep);
    fs::path base = fs::path(sweepDir) / workload.name;
    std::error_code ec;
    fs::create_directories(sweepDir, ec);
    for (auto [extension, text] : {std::pair{".csv", tuning::sweepCsv(groups)},
                                   std::pair{".svg", tuning::sweepSvg(groups)}})
      if (auto written = runtime::replaceFile(base.string() + extension, text); !written)
        fmt::print(stderr, "kiln_tune_bench: {}\n", written.error().message());
  }

  options.exhaustive = false;
  options.budgetSeconds = kBudgetFraction * row.exhaustiveSearch;
  auto tuned = tune(graph.ir(), options);
  if (!tuned || tuned->groups.empty() || tuned->groups.front().winner < 0) {
    row.error = tuned ? "the tuner found no valid candidate" : tuned.error().message();
    return row;
  }
  const tuning::TunedGroup &found = tuned->groups.front();
  row.tunerBest = found.winnerTiming()->medianSeconds;
  row.tunerTimed = static_cast<int>(found.candidates.size());
  row.tunerSearch = tuned->seconds - tuned->setupSeconds;
  row.tunerTotal = tuned->seconds;
  row.winner = found.winnerTiming()->schedule;
  // The same schedule in the sweep (matched by its index in the space), so the
  // comparison is free of the run-to-run noise between the two runs.
  int pick = found.spaceIndices[size_t(found.winner)];
  for (size_t i = 0; i < all.candidates.size(); ++i)
    if (all.spaceIndices[i] == pick)
      row.pickInSweep = all.candidates[i].medianSeconds;
  return row;
}

std::string table(const std::vector<Row> &rows) {
  std::string out =
      "| workload | space | default | exhaustive best | tuner best | best / exhaustive | "
      "pick in sweep / exhaustive | "
      "default / exhaustive | tuner timed | tuner search / exhaustive search | tuner total / "
      "exhaustive total |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Row &r : rows) {
    if (!r.error.empty()) {
      out += fmt::format("| {} | error: {} ||||||||||\n", r.name, r.error);
      continue;
    }
    out += fmt::format("| {} | {} | {} | {} | {} | {:.3f} | {:.3f} | {:.2f} | {} | {:.1f}% ({:.1f} s / "
                       "{:.1f} s) | {:.1f}% ({:.1f} s / {:.1f} s) |\n",
                       r.name, r.space, tuning::formatSeconds(r.defaultSeconds),
                       tuning::formatSeconds(r.exhaustiveBest), tuning::formatSeconds(r.tunerBest),
                       r.tunerBest / r.exhaustiveBest, r.pickInSweep / r.exhaustiveBest,
                       r.defaultSeconds / r.exhaustiveBest,
                       r.tunerTimed, 100 * r.tunerSearch / r.exhaustiveSearch, r.tunerSearch,
                       r.exhaustiveSearch, 100 * r.tunerTotal / r.exhaustiveTotal, r.tunerTotal,
                       r.exhaustiveTotal);
  }
  return out;
}

void usage() {
  std::fputs(R"(kiln_tune_bench: the autotuner against an exhaustive sweep on the CPU
usage: kiln_tune_bench [--only NAME,...] [--runs N] [--sweeps DIR] [--no-write]
  --only LIST   run only these workloads (matmul_256x256x256, conv_cnn1, ...)
  --runs N      timed runs per candidate (default 3; the median ranks them)
  --sweeps DIR  also write each sweep's CSV and SVG plot into DIR
  --no-write    print the table only (no bench/results file)
)",
             stdout);
}

} // namespace

int main(int argc, char **argv) {
  std::string only, sweepDir;
  int timedRuns = 3;
  bool write = true;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--only" && i + 1 < argc)
      only = std::string(",") + argv[++i] + ",";
    else if (arg == "--runs" && i + 1 < argc)
      timedRuns = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--sweeps" && i + 1 < argc)
      sweepDir = argv[++i];
    else if (arg == "--no-write")
      write = false;
    else {
      usage();
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
  }

  std::vector<Row> rows;
  auto start = std::chrono::steady_clock::now();
  for (const Workload &workload : workloads()) {
    if (!only.empty() && only.find("," + workload.name + ",") == std::string::npos)
      continue;
    fmt::print(stderr, "== {}\n", workload.name);
    rows.push_back(measure(workload, timedRuns, sweepDir));
  }
  double totalMinutes =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 60;

  std::string sourceDir = KILN_SOURCE_DIR;
  auto now = std::chrono::system_clock::now();
  std::string date = fmt::format("{:%Y-%m-%d}", now);
  bench::RunInfo run = bench::runInfo(sourceDir);
  std::string commit = run.commit;
  bool dirty = run.dirty;
  std::string machine = run.machine;
  std::string report = fmt::format(
      "# Autotuner against an exhaustive sweep, CPU, {}\n\n"
      "- date: {:%Y-%m-%d %H:%M} UTC\n"
      "- machine: {}; kernels on {} threads\n"
      "- load average (1/5/15 min) after: {}\n"
      "- kiln: commit {}{}, release build; whole run {:.1f} min\n\n"
      "Each workload is one fusion group. *Exhaustive*: every schedule of its space compiled, "
      "checked against the fp64 reference and timed (3 warm-ups, median of {} runs, each after "
      "a last-level-cache flush, 3 input sets cycled). *Tuner*: the same with a budget of {:.0f}% "
      "of the sweep's search time (compiles, checks and runs; the one-off random inputs and "
      "reference are reported in the total columns), the heuristic default first and then the "
      "cost model's order. *best / exhaustive*: the tuner's best median over the sweep's (goal "
      "<= 1.03; both are noisy medians, and the sweep's is the least of many); *pick in sweep*: "
      "the tuner's winner as the sweep timed it, free of the noise between the two runs; "
      "*default / "
      "exhaustive*: what tuning gains over the heuristic. On a shared machine (see the load "
      "average) kernels split over every core suffer most from other work.\n\n{}",
      date, now, machine, cpu::ThreadPool::defaultThreadCount(),
      run.loadAverage, commit,
      dirty ? " (with uncommitted changes)" : "", totalMinutes, timedRuns,
      100 * kBudgetFraction, table(rows));
  fmt::print("{}", report);
  if (write) {
    fs::path out = fs::path(sourceDir) / "bench" / "results" /
                   fmt::format("tune-cpu-{}-{}.md", date, commit);
    if (auto written = runtime::replaceFile(out.string(), report); !written) {
      fmt::print(stderr, "{}\n", written.error().message());
      return 1;
    }
    fmt::print(stderr, "wrote {}\n", out.string());
  }
  for (const Row &row : rows)
    if (!row.error.empty())
      return 1;
  return 0;
}
