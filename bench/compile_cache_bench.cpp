// kiln_compile_cache_bench: cold compile (empty kernel cache) against warm
// start (populated cache) of every example model: its GPU kernels for sm_90a
// with both backends, and compile() for the CPU with a populated tuning
// database. Prints a Markdown table and writes it, with the machine, date and
// commit, to bench/results/compile-cache-<date>-<commit>.md.
#include "RunInfo.h"
#include "compiler/Compile.h"
#include "codegen/Ptxas.h"
#include "compiler/tuner/Tuner.h"
#include "examples/models/ExampleRegistry.h"
#include "runtime/tuning/TuningDatabase.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using namespace kiln;
namespace fs = std::filesystem;

constexpr const char *kArch = "sm_90a";
/// Warm starts per row; the median is reported.
constexpr int kWarmRuns = 3;

/// One compile's figures.
struct Timing {
  double totalSeconds = 0, codegenSeconds = 0;
  std::string cacheOutcome;
  int kernels = 0;
};

/// What is compiled: the GPU kernels with one backend, or the whole model for the CPU.
enum class Flavor { GpuLlvm, GpuNvrtc, Cpu };

std::string flavorName(Flavor flavor) {
  switch (flavor) {
  case Flavor::GpuLlvm: return "llvm";
  case Flavor::GpuNvrtc: return "nvrtc";
  case Flavor::Cpu: return "cpu";
  }
  return "?";
}

std::optional<Flavor> parseFlavor(const std::string &name) {
  for (Flavor flavor : {Flavor::GpuLlvm, Flavor::GpuNvrtc, Flavor::Cpu})
    if (flavorName(flavor) == name)
      return flavor;
  return std::nullopt;
}

kiln::Expected<std::unique_ptr<Graph>> buildModel(const examples::ExampleModel &model) {
  auto graph = std::make_unique<Graph>(model.name, 1);
  model.build(*graph, model.defaultBatch);
  KILN_TRY_VOID(graph->finalize());
  return graph;
}

CompileOptions optionsFor(Flavor flavor, const fs::path &cacheDir) {
  CompileOptions options;
  options.kernelCacheDir = cacheDir.string();
  if (flavor == Flavor::Cpu) {
    options.target = TargetKind::Cpu;
    options.tuning = TuningMode::Use;
    options.tuningDbPath = (cacheDir / "tuning.sqlite").string();
  } else {
    options.target = TargetKind::Cuda;
    options.gpuArch = kArch;
    options.gpuBackend = flavor == Flavor::GpuNvrtc ? GpuBackend::Nvrtc : GpuBackend::Llvm;
  }
  return options;
}

/// The CPU rows' tuning database: a record for every tunable group, from a
/// tuning run that times each group's default once (what `kiln tune` with a
/// tiny budget leaves), so the warm start reads a record per group. Returns
/// how many records it wrote.
kiln::Expected<int> populateTuningDatabase(const examples::ExampleModel &model,
                                           const fs::path &cacheDir) {
  KILN_TRY(auto graph, buildModel(model));
  CompileOptions options = optionsFor(Flavor::Cpu, cacheDir);
  options.tuning = TuningMode::Off;
  tuning::TunerOptions tunerOptions;
  tunerOptions.maxTrials = 1; // every group still times its default
  tunerOptions.warmupRuns = 0;
  tunerOptions.timedRuns = 1;
  tunerOptions.inputSets = 1;
  tunerOptions.flushBytes = 0;
  KILN_TRY(tuning::TuneReport report, tuning::tuneGraph(graph->ir(), options, tunerOptions));
  KILN_TRY(tuning::TuningDatabase database,
           tuning::TuningDatabase::open(optionsFor(Flavor::Cpu, cacheDir).tuningDbPath));
  std::vector<tuning::TuningRecord> records =
      tuning::recordsFrom(report, report.targetFingerprint);
  for (const tuning::TuningRecord &record : records)
    KILN_TRY_VOID(database.put(record));
  return static_cast<int>(records.size());
}

kiln::Expected<Timing> compileOnce(const examples::ExampleModel &model, Flavor flavor,
                                   const fs::path &cacheDir) {
  KILN_TRY(auto graph, buildModel(model));
  CompileOptions options = optionsFor(flavor, cacheDir);
  CompileReport report;
  if (flavor == Flavor::Cpu) {
    KILN_TRY(CompiledModel compiled, compile(graph->ir(), options, &report));
    return Timing{report.totalSeconds, report.codegenSeconds,
                  fmt::format("{}; tuning: {}", report.kernelCache, report.tuning),
                  report.numKernels};
  }
  KILN_TRY(GpuKernels kernels, compileGpuKernels(graph->ir(), options, &report));
  return Timing{report.totalSeconds, report.codegenSeconds, report.kernelCache,
                static_cast<int>(kernels.kernels.size())};
}

/// A warm start: this benchmark run again as a fresh process that compiles
/// one model from the populated cache (nothing of this process's memory tier,
/// loaded NVRTC or probed versions carries over).
std::optional<Timing> warmStartInNewProcess(const std::string &self, const std::string &model,
                                            Flavor flavor, const fs::path &cacheDir) {
  std::string output = bench::commandOutput(fmt::format("'{}' --warm-one {} {} '{}'", self, model,
                                                        flavorName(flavor), cacheDir.string()));
  Timing timing;
  char outcome[256] = {};
  if (std::sscanf(output.c_str(), "%lf %lf %d %255[^\n]", &timing.totalSeconds,
                  &timing.codegenSeconds, &timing.kernels, outcome) != 4)
    return std::nullopt;
  timing.cacheOutcome = outcome;
  return timing;
}

/// The child side of warmStartInNewProcess.
int warmOne(const std::string &name, const std::string &flavorText, const std::string &dir) {
  const examples::ExampleModel *model = examples::findExampleModel(name);
  std::optional<Flavor> flavor = parseFlavor(flavorText);
  if (!model || !flavor)
    return 2;
  auto timing = compileOnce(*model, *flavor, dir);
  if (!timing) {
    fmt::print(stderr, "{}\n", timing.error().str());
    return 1;
  }
  fmt::print("{:.6f} {:.6f} {} {}\n", timing->totalSeconds, timing->codegenSeconds,
             timing->kernels, timing->cacheOutcome);
  return 0;
}

int64_t directoryBytes(const fs::path &dir) {
  int64_t bytes = 0;
  std::error_code error;
  for (fs::recursive_directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error))
    if (it->is_regular_file())
      bytes += static_cast<int64_t>(it->file_size());
  return bytes;
}

std::string seconds(double value) {
  return value < 0.1 ? fmt::format("{:.1f} ms", value * 1e3) : fmt::format("{:.2f} s", value);
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 5 && std::string(argv[1]) == "--warm-one")
    return warmOne(argv[2], argv[3], argv[4]);
  if (argc > 2 || (argc == 2 && std::string(argv[1]) != "--no-write")) {
    fmt::print(stderr, "usage: kiln_compile_cache_bench [--no-write]\n");
    return 2;
  }
  bool write = argc == 1;
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string sourceDir = KILN_SOURCE_DIR;

  std::string table =
      "| model | backend | kernels | cold compile | cold codegen | warm start | warm codegen | "
      "codegen speedup | total speedup | warm < 100 ms | entry size |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|\n";
  std::vector<std::string> tuningNotes;
  bool failed = false;
  for (const examples::ExampleModel &model : examples::exampleModels()) {
    for (Flavor flavor : {Flavor::GpuLlvm, Flavor::GpuNvrtc, Flavor::Cpu}) {
      std::string backendName = flavorName(flavor);
      char pattern[] = "/tmp/kiln-cache-bench-XXXXXX";
      if (!mkdtemp(pattern))
        return 1;
      fs::path dir = pattern;
      kiln::Expected<int> records = 0;
      if (flavor == Flavor::Cpu)
        records = populateTuningDatabase(model, dir);
      kiln::Expected<Timing> cold =
          records ? compileOnce(model, flavor, dir) : std::unexpected(records.error());
      std::vector<Timing> warm;
      for (int run = 0; cold && run < kWarmRuns; ++run)
        if (auto timing = warmStartInNewProcess(self, model.name, flavor, dir))
          warm.push_back(*timing);
      int64_t bytes = directoryBytes(dir / "kernels");
      fs::remove_all(dir);
      if (!cold || warm.size() != kWarmRuns) {
        fmt::print(stderr, "{} {}: {}\n", model.name, backendName,
                   cold ? "a warm start failed" : cold.error().str());
        table += fmt::format("| {} | {} | — | failed | | | | | | | |\n", model.name, backendName);
        failed = true;
        continue;
      }
      std::sort(warm.begin(), warm.end(), [](const Timing &a, const Timing &b) {
        return a.totalSeconds < b.totalSeconds;
      });
      const Timing &median = warm[kWarmRuns / 2];
      if (!median.cacheOutcome.starts_with("hit (disk)")) {
        fmt::print(stderr, "{} {}: the warm start was '{}', not a disk hit\n", model.name,
                   backendName, median.cacheOutcome);
        failed = true;
      }
      if (flavor == Flavor::Cpu)
        tuningNotes.push_back(fmt::format("{}: {} records written; warm start: {}", model.name,
                                          *records, median.cacheOutcome));
      table += fmt::format("| {} (batch {}) | {} | {} | {} | {} | {} | {} | {:.0f}x | {:.1f}x | "
                           "{} | {:.1f} KiB |\n",
                           model.name, model.defaultBatch, backendName, cold->kernels,
                           seconds(cold->totalSeconds), seconds(cold->codegenSeconds),
                           seconds(median.totalSeconds), seconds(median.codegenSeconds),
                           cold->codegenSeconds / std::max(median.codegenSeconds, 1e-9),
                           cold->totalSeconds / std::max(median.totalSeconds, 1e-9),
                           median.totalSeconds < 0.1 ? "yes" : "**no**",
                           static_cast<double>(bytes) / 1024);
      std::fflush(stdout);
    }
  }

  bench::RunInfo run = bench::runInfo(sourceDir);
  std::string report = fmt::format(
      "# Kernel cache: cold compile against warm start, {}\n\n"
      "- date: {} UTC\n"
      "- machine: {}\n"
      "- load average (1/5/15 min) after: {}\n"
      "- kiln: commit {}, release build; GPU kernels for {} (no GPU needed), ptxas: {}\n\n"
      "Each example at its default batch. *Cold*: compileGpuKernels (backends llvm and "
      "nvrtc) or compile() for the CPU (backend cpu) into an empty cache directory (graph "
      "passes, lowering, LLVM or NVRTC, ptxas for the LLVM backend's cubin, and the cache "
      "write). The CPU rows first fill a tuning database in that directory with a record for "
      "every tunable group (a tuning run that times each group's default once), so both their "
      "compiles read a record per group. *Warm start*: the same compile in a fresh process "
      "with the populated directory (median of {}): graph passes, tuning lookups and lowering "
      "still run, since the key is the kernel IR; codegen is the cache lookup (and, for the "
      "CPU, linking the cached object into the process). Speedups are cold over warm; the "
      "goal is a warm start under 100 ms.\n\n{}\n"
      "CPU tuning database per model:\n\n{}\n",
      run.date, run.time, run.machine, run.loadAverage, run.commitText(), kArch,
      bench::commandOutput(fmt::format("'{}' --version 2>/dev/null | tail -1",
                                codegen::ptxasPath())),
      kWarmRuns, table, fmt::format("- {}\n", fmt::join(tuningNotes, "\n- ")));
  fmt::print("{}", report);
  if (write) {
    fs::path out = fs::path(sourceDir) / "bench" / "results" /
                   fmt::format("compile-cache-{}-{}.md", run.date, run.commit);
    std::ofstream(out) << report;
    fmt::print(stderr, "wrote {}\n", out.string());
  }
  return failed ? 1 : 0;
}
