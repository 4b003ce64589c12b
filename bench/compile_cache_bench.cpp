// kiln_compile_cache_bench: cold compile (empty kernel cache) against warm
// start (populated cache) of every example model's GPU kernels for sm_90a,
// with both backends. Prints a Markdown table and writes it, with the machine,
// date and commit, to bench/results/compile-cache-<date>-<commit>.md.
#include "RunInfo.h"
#include "compiler/Compile.h"
#include "codegen/Ptxas.h"
#include "examples/models/ExampleRegistry.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

kiln::Expected<Timing> compileOnce(const examples::ExampleModel &model, GpuBackend backend,
                                   const fs::path &cacheDir) {
  Graph graph(model.name, 1);
  model.build(graph, model.defaultBatch);
  KILN_TRY_VOID(graph.finalize());
  CompileOptions options;
  options.target = TargetKind::Cuda;
  options.gpuArch = kArch;
  options.gpuBackend = backend;
  options.kernelCacheDir = cacheDir.string();
  CompileReport report;
  KILN_TRY(GpuKernels kernels, compileGpuKernels(graph.ir(), options, &report));
  return Timing{report.totalSeconds, report.codegenSeconds, report.kernelCache,
                static_cast<int>(kernels.kernels.size())};
}

/// A warm start: this benchmark run again as a fresh process that compiles
/// one model from the populated cache (nothing of this process's memory tier,
/// loaded NVRTC or probed versions carries over).
std::optional<Timing> warmStartInNewProcess(const std::string &self, const std::string &model,
                                            GpuBackend backend, const fs::path &cacheDir) {
  std::string output = bench::commandOutput(
      fmt::format("'{}' --warm-one {} {} '{}'", self, model,
                  backend == GpuBackend::Nvrtc ? "nvrtc" : "llvm", cacheDir.string()));
  Timing timing;
  char outcome[128] = {};
  if (std::sscanf(output.c_str(), "%lf %lf %d %127[^\n]", &timing.totalSeconds,
                  &timing.codegenSeconds, &timing.kernels, outcome) != 4)
    return std::nullopt;
  timing.cacheOutcome = outcome;
  return timing;
}

/// The child side of warmStartInNewProcess.
int warmOne(const std::string &name, const std::string &backend, const std::string &dir) {
  const examples::ExampleModel *model = examples::findExampleModel(name);
  if (!model)
    return 2;
  auto timing =
      compileOnce(*model, backend == "nvrtc" ? GpuBackend::Nvrtc : GpuBackend::Llvm, dir);
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
      "codegen speedup | total speedup | entry size |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  bool failed = false;
  for (const examples::ExampleModel &model : examples::exampleModels()) {
    for (GpuBackend backend : {GpuBackend::Llvm, GpuBackend::Nvrtc}) {
      std::string backendName = backend == GpuBackend::Nvrtc ? "nvrtc" : "llvm";
      char pattern[] = "/tmp/kiln-cache-bench-XXXXXX";
      if (!mkdtemp(pattern))
        return 1;
      fs::path dir = pattern;
      auto cold = compileOnce(model, backend, dir);
      std::vector<Timing> warm;
      for (int run = 0; cold && run < kWarmRuns; ++run)
        if (auto timing = warmStartInNewProcess(self, model.name, backend, dir))
          warm.push_back(*timing);
      int64_t bytes = directoryBytes(dir);
      fs::remove_all(dir);
      if (!cold || warm.size() != kWarmRuns) {
        fmt::print(stderr, "{} {}: {}\n", model.name, backendName,
                   cold ? "a warm start failed" : cold.error().str());
        table += fmt::format("| {} | {} | — | failed | | | | | | |\n", model.name, backendName);
        failed = true;
        continue;
      }
      std::sort(warm.begin(), warm.end(), [](const Timing &a, const Timing &b) {
        return a.totalSeconds < b.totalSeconds;
      });
      const Timing &median = warm[kWarmRuns / 2];
      if (median.cacheOutcome != "hit (disk)") {
        fmt::print(stderr, "{} {}: the warm start was '{}', not a disk hit\n", model.name,
                   backendName, median.cacheOutcome);
        failed = true;
      }
      table += fmt::format("| {} (batch {}) | {} | {} | {} | {} | {} | {} | {:.0f}x | {:.1f}x | "
                           "{:.1f} KiB |\n",
                           model.name, model.defaultBatch, backendName, cold->kernels,
                           seconds(cold->totalSeconds), seconds(cold->codegenSeconds),
                           seconds(median.totalSeconds), seconds(median.codegenSeconds),
                           cold->codegenSeconds / std::max(median.codegenSeconds, 1e-9),
                           cold->totalSeconds / std::max(median.totalSeconds, 1e-9),
                           static_cast<double>(bytes) / 1024);
      std::fflush(stdout);
    }
  }

  auto now = std::chrono::system_clock::now();
  std::string date = fmt::format("{:%Y-%m-%d}", now);
  bench::RunInfo run = bench::runInfo(sourceDir);
  std::string commit = run.commit;
  bool dirty = run.dirty;
  std::string machine = run.machine;
  std::string report = fmt::format(
      "# Kernel cache: cold compile against warm start, {}\n\n"
      "- date: {:%Y-%m-%d %H:%M} UTC\n"
      "- machine: {}\n"
      "- load average (1/5/15 min) after: {}\n"
      "- kiln: commit {}{}, release build; GPU kernels for {} (no GPU needed), ptxas: {}\n\n"
      "Each example at its default batch. *Cold*: compileGpuKernels into an empty cache "
      "directory (graph passes, lowering, LLVM or NVRTC, ptxas for the LLVM backend's cubin, "
      "and the cache write). *Warm start*: the same compile in a fresh process with the "
      "populated directory (median of {}): graph passes and lowering still run, since the "
      "key is the kernel IR; codegen is the cache lookup. Speedups are cold over warm.\n\n{}",
      date, now, machine, run.loadAverage, commit,
      dirty ? " (with uncommitted changes)" : "", kArch,
      bench::commandOutput(fmt::format("'{}' --version 2>/dev/null | tail -1",
                                codegen::ptxasPath())),
      kWarmRuns, table);
  fmt::print("{}", report);
  if (write) {
    fs::path out = fs::path(sourceDir) / "bench" / "results" /
                   fmt::format("compile-cache-{}-{}.md", date, commit);
    std::ofstream(out) << report;
    fmt::print(stderr, "wrote {}\n", out.string());
  }
  return failed ? 1 : 0;
}
