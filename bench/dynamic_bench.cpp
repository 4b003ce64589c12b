// kiln_dynamic_bench: for the examples that take a symbolic batch, one model compiled for
// N in [1, 64] against a model compiled statically for each batch size, at sizes 1, 7 and 64
// on the CPU (or a GPU, --target cuda): the time per run of each (their runs interleaved, so
// the machine's load falls on both alike) and the compile-once time against the sum of the
// static compiles (docs/dynamic-shapes.md). Prints a Markdown table and writes it, with the
// machine, date and commit, to bench/results/dynamic-<target>-<date>-<commit>.md. Goal:
// within 10% of static at every size.
//
// usage: kiln_dynamic_bench [--models mlp,cnn,resnet,transformer] [--sizes 1,7,64]
//                           [--target cpu|cuda]
#include "RunInfo.h"
#include "compiler/Compile.h"
#include "examples/models/ExampleRegistry.h"
#include "support/Elapsed.h"
#include "support/Median.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace kiln;
using Clock = std::chrono::steady_clock;

constexpr int64_t kLargest = 64;
constexpr int kPairs = 15;       ///< timed runs of each side, alternating
constexpr double kGoal = 1.10;   ///< dynamic time / static time

std::vector<std::string> splitList(const std::string &text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');)
    if (!item.empty())
      items.push_back(item);
  return items;
}

struct Compiled {
  CompiledModel model;
  double seconds;
};

Expected<Compiled> compileExample(const examples::ExampleModel &example, Dim batch,
                                  TargetKind target) {
  Graph graph(example.name, 1);
  example.build(graph, batch);
  KILN_TRY_VOID(graph.finalize());
  CompileOptions options;
  options.target = target;
  options.tuning = TuningMode::Off;
  auto start = Clock::now();
  KILN_TRY(CompiledModel model, compile(graph.ir(), options));
  double seconds = secondsSince(start);
  KILN_TRY_VOID(model.bindParams(graph.paramValues()));
  return Compiled{std::move(model), seconds};
}

/// The example's one input at `batch`, seeded.
Expected<NamedTensors> inputsAt(const examples::ExampleModel &example, int64_t batch) {
  Graph graph(example.name, 1);
  example.build(graph, batch);
  KILN_TRY_VOID(graph.finalize());
  NamedTensors inputs;
  Rng rng(static_cast<uint64_t>(batch));
  for (const ir::Value *input : graph.ir().inputs())
    inputs.emplace(input->name(), HostTensor::randomUniform(input->type().dtype,
                                                            input->type().shape, rng, -1, 1));
  return inputs;
}

/// Median seconds per run of each model on `inputs`, their runs alternating.
Expected<std::pair<double, double>> timeInTurn(const CompiledModel &a, const CompiledModel &b,
                                               const NamedTensors &inputs) {
  std::vector<double> aSeconds, bSeconds;
  for (int i = 0; i < kPairs + 2; ++i) {
    auto start = Clock::now();
    KILN_TRY(NamedTensors ignored, a.run(inputs));
    double aElapsed = secondsSince(start);
    start = Clock::now();
    KILN_TRY(NamedTensors alsoIgnored, b.run(inputs));
    double bElapsed = secondsSince(start);
    if (i >= 2) { // two warm-up pairs
      aSeconds.push_back(aElapsed);
      bSeconds.push_back(bElapsed);
    }
  }
  return std::pair{median(aSeconds), median(bSeconds)};
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> models = {"mlp", "cnn", "resnet", "transformer"};
  std::vector<int64_t> sizes = {1, 7, 64};
  TargetKind target = TargetKind::Cpu;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--target" && (value == "cpu" || value == "cuda")) {
      target = value == "cpu" ? TargetKind::Cpu : TargetKind::Cuda;
    } else if (flag == "--models") {
      models = splitList(value);
    } else if (flag == "--sizes") {
      sizes.clear();
      for (const std::string &item : splitList(value))
        sizes.push_back(std::stoll(item));
    } else {
      std::fprintf(stderr, "usage: kiln_dynamic_bench [--models a,b] [--sizes 1,7,64] "
                           "[--target cpu|cuda]\n");
      return 2;
    }
  }
  const char *targetName = target == TargetKind::Cpu ? "cpu" : "cuda";
  // Compile times without the kernel cache: every compile generates its code.
  setenv("KILN_CACHE", "off", 1);
  bench::RunInfo info = bench::runInfo(KILN_SOURCE_DIR);
  std::string table =
      "| model | batch | static ms | dynamic ms | dynamic/static | goal <= 1.10 |\n"
      "|---|---:|---:|---:|---:|:---:|\n";
  std::string compiles = "| model | dynamic compile s | static compiles s (sum) | sizes |\n"
                         "|---|---:|---:|---|\n";
  bool failed = false;
  for (const std::string &name : models) {
    const examples::ExampleModel *example = examples::findExampleModel(name);
    if (!example) {
      std::fprintf(stderr, "kiln_dynamic_bench: no example called '%s'\n", name.c_str());
      return 2;
    }
    auto dynamic = compileExample(*example, kiln::dim("N", 1, kLargest), target);
    if (!dynamic) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), dynamic.error().str().c_str());
      failed = true;
      continue;
    }
    double staticCompiles = 0;
    for (int64_t size : sizes) {
      auto fixed = compileExample(*example, size, target);
      auto inputs = inputsAt(*example, size);
      if (!fixed || !inputs) {
        std::fprintf(stderr, "%s at %lld: %s\n", name.c_str(), static_cast<long long>(size),
                     (!fixed ? fixed.error() : inputs.error()).str().c_str());
        failed = true;
        continue;
      }
      staticCompiles += fixed->seconds;
      auto times = timeInTurn(fixed->model, dynamic->model, *inputs);
      if (!times) {
        std::fprintf(stderr, "%s at %lld: %s\n", name.c_str(), static_cast<long long>(size),
                     times.error().str().c_str());
        failed = true;
        continue;
      }
      double ratio = times->second / times->first;
      std::string row = fmt::format("| {} | {} | {:.3f} | {:.3f} | {:.2f} | {} |\n", name, size,
                                    times->first * 1e3, times->second * 1e3, ratio,
                                    ratio <= kGoal ? "ok" : "**MISSED**");
      std::fputs(row.c_str(), stdout);
      std::fflush(stdout);
      table += row;
    }
    compiles += fmt::format("| {} | {:.2f} | {:.2f} | {} |\n", name, dynamic->seconds,
                            staticCompiles, fmt::join(sizes, ", "));
  }
  std::string report = fmt::format(
      "# One compile for a range of batch sizes against a compile per size, {}, {}\n\n"
      "- date: {} UTC\n- machine: {}\n- load average (1/5/15 min): {} before\n"
      "- kiln: commit {}, release build, target {}, tuning off, kernel cache off\n"
      "- dynamic: the example compiled once with its batch a size symbol, N in [1, {}]; "
      "static: compiled for the one batch size. Median of {} runs each, the two models' runs "
      "alternating, after 2 warm-up pairs.\n\n{}\n{}",
      targetName, info.date, info.time, info.machine, info.loadAverage, info.commitText(),
      targetName, kLargest, kPairs, table, compiles);
  std::fputs(("\n" + report).c_str(), stdout);
  std::string path = fmt::format("{}/bench/results/dynamic-{}-{}-{}.md", KILN_SOURCE_DIR,
                                 targetName, info.date, info.commit);
  std::ofstream(path) << report;
  std::printf("written to %s\n", path.c_str());
  return failed ? 1 : 0;
}
