// kiln-run-bundle: loads an AOT bundle and runs it, linked to kiln_rt alone —
// the proof that a bundle needs neither the compiler, LLVM nor NVRTC.
#include "runtime/bundle/BundleLoader.h"
#include "runtime/bundle/SampleTensors.h"
#include "support/Elapsed.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr const char *kUsage = R"(usage: kiln-run-bundle FILE [--zeros] [--seed S] [--iterations N]

Loads a bundle written by `kiln aot`, runs it on seeded random inputs (normal
floats, integers in [0, 10); --zeros for all zeros) and prints each output's
summary, the load time and the median time per run. Parameters the bundle does
not bind get seeded random values too.
exit status: 0 success, 1 a failure, 2 bad usage
)";

} // namespace

int main(int argc, char **argv) {
  using namespace kiln;
  std::string path;
  bool zeros = false;
  uint64_t seed = 0;
  int iterations = 5;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      fmt::print("{}", kUsage);
      return 0;
    }
    if (arg == "--zeros") {
      zeros = true;
    } else if ((arg == "--seed" || arg == "--iterations") && i + 1 < argc) {
      char *end = nullptr;
      unsigned long long value = std::strtoull(argv[++i], &end, 10);
      if (!end || *end != '\0' || (arg == "--iterations" && (value < 1 || value > 1000000))) {
        fmt::print(stderr, "kiln-run-bundle: bad value '{}' for {}\n", argv[i], arg);
        return 2;
      }
      if (arg == "--seed")
        seed = value;
      else
        iterations = static_cast<int>(value);
    } else if (path.empty() && !arg.starts_with("--")) {
      path = arg;
    } else {
      fmt::print(stderr, "kiln-run-bundle: unexpected argument '{}'\n{}", arg, kUsage);
      return 2;
    }
  }
  if (path.empty()) {
    fmt::print(stderr, "{}", kUsage);
    return 2;
  }

  auto start = std::chrono::steady_clock::now();
  auto loaded = runtime::bundle::loadBundle(path);
  double loadMs = millisecondsSince(start);
  if (!loaded) {
    fmt::print(stderr, "kiln-run-bundle: error: {}\n", loaded.error().str());
    return 1;
  }
  CompiledModel &model = loaded->model;
  const runtime::LaunchPlan &plan = model.plan();
  fmt::print("bundle: {} ({} for {})\n", path, loaded->code, loaded->meta.model);
  fmt::print("load:   {:.2f} ms ({} kernels{})\n", loadMs, model.numKernels(),
             loaded->weightsBound ? ", weights bound" : "");
  if (!loaded->weightsBound && !plan.params.empty())
    if (auto bound = model.bindParams(
            runtime::bundle::sampleTensors(plan, plan.params, seed ^ 0x9e3779b97f4a7c15ULL, zeros));
        !bound) {
      fmt::print(stderr, "kiln-run-bundle: error: {}\n", bound.error().str());
      return 1;
    }
  NamedTensors inputs = runtime::bundle::sampleTensors(plan, plan.inputs, seed, zeros);
  std::vector<double> times;
  Expected<NamedTensors> outputs = NamedTensors{};
  for (int i = 0; i < iterations; ++i) {
    auto runStart = std::chrono::steady_clock::now();
    outputs = model.run(inputs);
    times.push_back(millisecondsSince(runStart));
    if (!outputs) {
      fmt::print(stderr, "kiln-run-bundle: error: {}\n", outputs.error().str());
      return 1;
    }
  }
  for (const auto &[name, tensor] : *outputs)
    fmt::print("output {}\n", runtime::bundle::summarizeTensor(name, tensor));
  std::sort(times.begin(), times.end());
  fmt::print("run:    {:.3f} ms (median of {}, the first included)\n", times[times.size() / 2],
             times.size());
  return 0;
}
