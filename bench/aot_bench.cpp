// kiln_aot_bench: for each example model, the time to load its CPU AOT bundle
// (median of several loads, each a fresh load of the file: read, checks,
// dlopen of the host code, plan binding, weights) against compile() from
// scratch, and a check that the loaded bundle's outputs equal compile()'s bit
// for bit. Prints a Markdown table and writes it, with the machine, date and
// commit, to bench/results/aot-cpu-<date>-<commit>.md. Goal: load < 20 ms.
#include "RunInfo.h"
#include "compiler/Compile.h"
#include "compiler/aot/AotBundle.h"
#include "examples/models/ExampleRegistry.h"
#include "runtime/bundle/BundleLoader.h"
#include "runtime/bundle/SampleTensors.h"
#include "support/Elapsed.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace kiln;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kLoads = 7;
/// Loads of the bundle with weights (up to 80 MiB each).
constexpr int kWeightLoads = 3;
constexpr double kGoalMs = 20;

bool sameOutputs(const NamedTensors &a, const NamedTensors &b) {
  if (a.size() != b.size())
    return false;
  for (const auto &[name, tensor] : a) {
    auto other = b.find(name);
    if (other == b.end() || other->second.byteSize() != tensor.byteSize() ||
        std::memcmp(other->second.bytes().data(), tensor.bytes().data(), tensor.byteSize()) != 0)
      return false;
  }
  return true;
}

std::string sizeText(size_t bytes) {
  return bytes >= (size_t{1} << 20) ? fmt::format("{:.1f} MiB", double(bytes) / (1 << 20))
                                    : fmt::format("{:.0f} KiB", double(bytes) / 1024);
}

/// One table row, or the reason the model has none.
Expected<std::string> measure(const examples::ExampleModel &model, const fs::path &dir,
                              std::vector<double> &loadMedians) {
  Graph graph(model.name, 1);
  model.build(graph, model.defaultBatch);
  KILN_TRY_VOID(graph.finalize());

  CompileOptions compileOptions;
  compileOptions.target = TargetKind::Cpu;
  CompileReport report;
  auto compileStart = Clock::now();
  KILN_TRY(CompiledModel compiled, compile(graph.ir(), compileOptions, &report));
  double compileMs = millisecondsSince(compileStart);

  // Two bundles: code and plan only (the goal's load), and with the weights.
  compiler::AotOptions aot;
  aot.target = TargetKind::Cpu;
  std::string codePath = (dir / (model.name + ".kiln")).string();
  compiler::AotReport codeReport;
  KILN_TRY_VOID(compiler::writeBundle(graph.ir(), aot, codePath, &codeReport));
  aot.weights = graph.paramValues();
  std::string weightsPath = (dir / (model.name + "-weights.kiln")).string();
  compiler::AotReport weightsReport;
  KILN_TRY_VOID(compiler::writeBundle(graph.ir(), aot, weightsPath, &weightsReport));

  /// Median and fastest of `count` fresh loads; the last model stays in `last`.
  std::optional<runtime::bundle::LoadedBundle> last;
  auto time = [&](const std::string &path, int count) -> Expected<std::pair<double, double>> {
    std::vector<double> loads;
    for (int i = 0; i < count; ++i) {
      last.reset(); // the previous model's code is unloaded before the next load
      auto start = Clock::now();
      KILN_TRY(runtime::bundle::LoadedBundle loaded, runtime::bundle::loadBundle(path));
      loads.push_back(millisecondsSince(start));
      last.emplace(std::move(loaded));
    }
    std::sort(loads.begin(), loads.end());
    return std::pair{loads[loads.size() / 2], loads.front()};
  };
  KILN_TRY(auto code, time(codePath, kLoads));
  KILN_TRY(auto withWeights, time(weightsPath, kWeightLoads));
  loadMedians.push_back(code.first);

  const runtime::LaunchPlan &plan = last->model.plan();
  NamedTensors inputs = runtime::bundle::sampleTensors(plan, plan.inputs, 1);
  KILN_TRY_VOID(compiled.bindParams(graph.paramValues()));
  KILN_TRY(NamedTensors expected, compiled.run(inputs));
  KILN_TRY(NamedTensors actual, last->model.run(inputs));
  bool same = sameOutputs(expected, actual);

  size_t weightBytes = weightsReport.bytes - codeReport.bytes;
  return fmt::format("| {} (batch {}) | {} | {} | {:.0f} ms | {:.2f} ms ({:.2f}) | {:.0f}x | {} | "
                     "{} | {:.1f} ms ({:.1f}) | {} |\n",
                     model.name, model.defaultBatch, report.numKernels,
                     sizeText(codeReport.bytes), compileMs, code.first, code.second,
                     compileMs / std::max(code.first, 1e-6),
                     code.first < kGoalMs ? "yes" : "**no**", sizeText(weightBytes),
                     withWeights.first, withWeights.second, same ? "yes" : "**NO**");
}

} // namespace

int main(int argc, char **argv) {
  bool write = true;
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--no-write")
      write = false;
    else if (!arg.starts_with("--") && examples::findExampleModel(arg))
      only.insert(arg);
    else {
      fmt::print(stderr, "usage: kiln_aot_bench [--no-write] [example...]\n");
      return 2;
    }
  }
  char pattern[] = "/tmp/kiln-aot-bench-XXXXXX";
  if (!mkdtemp(pattern))
    return 1;
  fs::path dir = pattern;

  std::string table = fmt::format(
      "| model | kernels | bundle | compile() | load: median of {} (fastest) | compile / load | "
      "load < 20 ms | weights | load with weights: median of {} (fastest) | same outputs |\n"
      "|---|---:|---:|---:|---:|---:|---|---:|---:|---|\n",
      kLoads, kWeightLoads);
  bool failed = false;
  std::vector<double> medians;
  for (const examples::ExampleModel &model : examples::exampleModels()) {
    if (!only.empty() && !only.contains(model.name))
      continue;
    fmt::print("{}...\n", model.name);
    std::fflush(stdout);
    auto row = measure(model, dir, medians);
    if (!row) {
      fmt::print(stderr, "{}: {}\n", model.name, row.error().str());
      table += fmt::format("| {} | failed | | | | | | | | |\n", model.name);
      failed = true;
      continue;
    }
    table += *row;
    failed = failed || row->find("**") != std::string::npos;
  }
  fs::remove_all(dir);
  fmt::print("\n{}", table);

  if (write) {
    std::string sourceDir = KILN_SOURCE_DIR;
    bench::RunInfo run = bench::runInfo(sourceDir);
    std::string text = fmt::format(
        "# AOT bundles on the CPU: load time against compile(), {}\n\n"
        "- date: {} UTC\n- machine: {}\n"
        "- load average (1/5/15 min) after: {}\n"
        "- kiln: commit {}, release build\n\n"
        "Each example at its default batch. *compile()*: the CPU compile from the graph (graph "
        "passes, lowering, LLVM at O3, JIT). *Load*: `loadBundle` of the file written by "
        "`kiln aot --target cpu` (read, container and plan checks, CPU feature check, memfd + "
        "dlopen of the host code, kernel lookup), each load a fresh one after the previous "
        "model was destroyed; the goal (< 20 ms) is for this bundle of code and plan. *Load "
        "with weights*: the same bundle written with `--embed-params`, whose load also decodes "
        "and binds every parameter (bounded by copying the bytes). *Same outputs*: the loaded "
        "bundle (with weights) and compile()'s model give bit-identical outputs on the same "
        "inputs.\n\n{}",
        run.date, run.time, run.machine, run.loadAverage, run.commitText(), table);
    std::string path =
        fmt::format("{}/bench/results/aot-cpu-{}-{}.md", sourceDir, run.date, run.commit);
    std::ofstream(path) << text;
    fmt::print("wrote {}\n", path);
  }
  return failed ? 1 : 0;
}
