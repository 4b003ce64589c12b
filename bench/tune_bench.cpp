// kiln_tune_bench: how well the autotuner searches, on the CPU or a GPU. For
// GEMM and conv2d shapes it runs an exhaustive sweep of each group's schedule
// space, then the tuner with a budget of a tenth of the sweep's search time,
// and compares the best times found and the time spent. Prints a Markdown
// table and writes it, with the machine, date and commit, to
// bench/results/tune-<target>-<date>-<commit>.md.
#include "RunInfo.h"
#include "compiler/tuner/Tuner.h"
#include "compiler/tuner/SweepExport.h"
#include "runtime/cache/AtomicFile.h"
#include "compiler/tuner/TuneProgressBar.h"
#include "frontend/Graph.h"
#include "frontend/Ops.h"
#include "runtime/cpu/ThreadPool.h"
#include "support/Elapsed.h"

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

Workload gemm(int64_t m, int64_t k, int64_t n, DType dtype = DType::F32) {
  std::string prefix = dtype == DType::F32 ? "matmul" : fmt::format("matmul_{}", dtypeName(dtype));
  return {fmt::format("{}_{}x{}x{}", prefix, m, k, n), [=](Graph &g) {
            Tensor a = g.input("a", {m, k}, dtype);
            Tensor b = g.input("b", {k, n}, dtype);
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

/// A 3x3 "same" conv2d in NHWC, the layout of the GPU's implicit-GEMM kernels.
Workload convNhwc(std::string name, int64_t batch, int64_t inChannels, int64_t outChannels,
                  int64_t imageSize, DType dtype) {
  return {std::move(name), [=](Graph &g) {
            Tensor x = g.input("x", {batch, imageSize, imageSize, inChannels}, dtype);
            Tensor w = g.input("w", {outChannels, 3, 3, inChannels}, dtype);
            Conv2DOptions options;
            options.padding = Padding::symmetric(1, 1);
            options.layout = Layout::NHWC;
            g.output("y", conv2d(x, w, options));
          }};
}

/// CPU: GEMMs (M x K x N): square ones, a wide one and GPT-2 small's MLP up
/// projection at 128 tokens; the CNN's convs and VGG16's first and last
/// blocks' (the kiln_cpu_bench shapes that fit a few minutes on two cores).
/// CUDA: bf16 tensor-core GEMMs at GPT-2 small's projections over 512 tokens
/// and 1024^3, and bf16 NHWC convs of a ResNet stage and VGG16's block 4 (the
/// tensor-cores issue's shapes small enough that the fp64 reference check of
/// every candidate stays in seconds). Sim: tiny shapes that run the same path
/// on the simulator, whose times mean nothing.
std::vector<Workload> workloads(TargetKind target) {
  if (target == TargetKind::Cuda)
    return {gemm(512, 768, 3072, DType::BF16), gemm(512, 3072, 768, DType::BF16),
            gemm(512, 768, 768, DType::BF16), gemm(1024, 1024, 1024, DType::BF16),
            convNhwc("conv_bf16_resnet_56x56x64", 8, 64, 64, 56, DType::BF16),
            convNhwc("conv_bf16_vgg4_28x28x256", 1, 256, 256, 28, DType::BF16)};
  if (target == TargetKind::Sim)
    return {gemm(40, 72, 48, DType::BF16),
            convNhwc("conv_bf16_tiny_6x6x16", 1, 16, 16, 6, DType::BF16)};
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
  std::string name, summary, target;
  int space = 0, tunerTimed = 0;
  double defaultSeconds = 0, exhaustiveBest = 0, tunerBest = 0;
  double pickInSweep = 0; ///< the tuner's winner as the sweep timed it
  double exhaustiveSearch = 0, tunerSearch = 0, exhaustiveTotal = 0, tunerTotal = 0;
  std::string winner, error;
};

Expected<tuning::TuneReport> tune(const ir::Graph &graph, TargetKind target,
                                  tuning::TunerOptions options) {
  CompileOptions compileOptions;
  compileOptions.target = target;
  // Every candidate compiled afresh: the sweep before the tuner must not
  // leave it compiled kernels to link.
  compileOptions.useKernelCache = false;
  tuning::TuneProgressBar bar(std::cerr, tuning::TuneProgressBar::isTerminal(stderr));
  options.progress = [&bar](const tuning::TuneProgress &event) { bar(event); };
  return tuning::tuneGraph(graph, compileOptions, options);
}

/// The one tuned group's figures (each workload is a single group).
Row measure(const Workload &workload, TargetKind target, int timedRuns,
            const std::string &sweepDir) {
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
  auto sweep = tune(graph.ir(), target, options);
  if (!sweep || sweep->groups.empty() || sweep->groups.front().winner < 0) {
    row.error = sweep ? "no valid candidate" : sweep.error().message();
    return row;
  }
  const tuning::TunedGroup &all = sweep->groups.front();
  row.summary = all.identity.summary;
  row.target = sweep->target;
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
  auto tuned = tune(graph.ir(), target, options);
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
  std::fputs(R"(kiln_tune_bench: the autotuner against an exhaustive sweep
usage: kiln_tune_bench [--target cpu|cuda|sim] [--only NAME,...] [--runs N]
                       [--sweeps DIR] [--out DIR] [--no-write]
  --target T    cpu (default), cuda (GPU 0: bf16 tensor-core GEMMs and convs)
                or sim (tiny shapes on the SIMT simulator: the path, not times)
  --only LIST   run only these workloads (matmul_256x256x256, conv_cnn1, ...)
  --runs N      timed runs per candidate (default 3; the median ranks them)
  --sweeps DIR  also write each sweep's CSV and SVG plot into DIR
  --out DIR     write the result file into DIR (default bench/results)
  --no-write    print the table only (no result file)
)",
             stdout);
}

} // namespace

int main(int argc, char **argv) {
  std::string only, sweepDir, outDir;
  TargetKind target = TargetKind::Cpu;
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
    else if (arg == "--out" && i + 1 < argc)
      outDir = argv[++i];
    else if (arg == "--target" && i + 1 < argc) {
      auto parsed = parseTargetKind(argv[++i]);
      if (!parsed || *parsed == TargetKind::Auto) {
        fmt::print(stderr, "kiln_tune_bench: --target expects cpu, cuda or sim\n");
        return 2;
      }
      target = *parsed;
    } else if (arg == "--no-write")
      write = false;
    else {
      usage();
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
  }

  std::vector<Row> rows;
  auto start = std::chrono::steady_clock::now();
  for (const Workload &workload : workloads(target)) {
    if (!only.empty() && only.find("," + workload.name + ",") == std::string::npos)
      continue;
    fmt::print(stderr, "== {}\n", workload.name);
    rows.push_back(measure(workload, target, timedRuns, sweepDir));
  }
  std::string targetName(targetKindName(target));
  std::string targetText = targetName;
  for (const Row &row : rows)
    if (!row.target.empty())
      targetText = row.target;
  bool cpu = target == TargetKind::Cpu;
  double totalMinutes = secondsSince(start) / 60;

  std::string sourceDir = KILN_SOURCE_DIR;
  bench::RunInfo run = bench::runInfo(sourceDir);
  std::string report = fmt::format(
      "# Autotuner against an exhaustive sweep, {}, {}\n\n"
      "- date: {} UTC\n"
      "- machine: {}{}\n"
      "- target: {}\n"
      "- load average (1/5/15 min) after: {}\n"
      "- kiln: commit {}, release build; whole run {:.1f} min\n\n"
      "Each workload is one fusion group. *Exhaustive*: every schedule of its space compiled, "
      "checked against the fp64 reference and timed (3 warm-ups, median of {} runs, each after "
      "{}, 3 input sets cycled). *Tuner*: the same with a budget of {:.0f}% "
      "of the sweep's search time (compiles, checks and runs; the one-off random inputs and "
      "reference are reported in the total columns), the heuristic default first and then the "
      "cost model's order. *best / exhaustive*: the tuner's best median over the sweep's (goal "
      "<= 1.03; both are noisy medians, and the sweep's is the least of many); *pick in sweep*: "
      "the tuner's winner as the sweep timed it, free of the noise between the two runs; "
      "*default / exhaustive*: what tuning gains over the heuristic.{}\n\n{}",
      cpu ? "CPU" : targetName, run.date, run.time, run.machine,
      cpu ? fmt::format("; kernels on {} threads", cpu::ThreadPool::defaultThreadCount()) : "",
      targetText, run.loadAverage, run.commitText(),
      totalMinutes, timedRuns,
      cpu ? "a last-level-cache flush, wall-clock time"
          : "an L2 flush, device events around the launch",
      100 * kBudgetFraction,
      cpu ? " On a shared machine (see the load average) kernels split over every core suffer "
            "most from other work."
          : target == TargetKind::Sim ? " The simulator's times say nothing about a GPU: this "
                                        "run checks the path."
                                      : "",
      table(rows));
  fmt::print("{}", report);
  if (write) {
    fs::path dir = outDir.empty() ? fs::path(sourceDir) / "bench" / "results" : fs::path(outDir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    fs::path out = dir / fmt::format("tune-{}-{}-{}.md", targetName, run.date, run.commit);
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
