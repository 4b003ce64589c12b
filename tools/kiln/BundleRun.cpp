// kiln run on a bundle: load it with the runtime alone (no compile), run it
// on seeded inputs, print the outputs, the load time and the time per run.
#include "frontend/io/Safetensors.h"
#include "runtime/bundle/BundleFile.h"
#include "runtime/bundle/BundleLoader.h"
#include "runtime/bundle/SampleTensors.h"
#include "support/Elapsed.h"
#include "support/RegularFile.h"
#include "tools/kiln/Commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>

namespace kiln::tool {

bool isBundlePath(const std::string &path) {
  if (path.ends_with(".kiln"))
    return true;
  // Not a regular file (a FIFO would block): not a bundle; the model reader
  // then says what it is.
  auto file = openRegularFile(path, "model");
  std::string magic(runtime::bundle::kBundleMagic.size(), '\0');
  return file && readExactly(*file, magic.data(), magic.size(), 0, "model", path) &&
         magic == runtime::bundle::kBundleMagic;
}

namespace {

/// Runs `model` `iterations` times on `tensors`: the first run's outputs and the median time
/// of the others (0 when there is only one).
Expected<std::pair<NamedTensors, double>>
timedRuns(const CompiledModel &model, const NamedTensors &tensors, int64_t iterations) {
  KILN_TRY(NamedTensors outputs, model.run(tensors));
  std::vector<double> seconds;
  for (int64_t i = 1; i < iterations; ++i) {
    auto runStart = std::chrono::steady_clock::now();
    KILN_TRY_VOID(model.run(tensors));
    seconds.push_back(secondsSince(runStart));
  }
  std::sort(seconds.begin(), seconds.end());
  return std::pair{std::move(outputs), seconds.empty() ? 0.0 : seconds[seconds.size() / 2]};
}

std::string timeText(double seconds, int64_t iterations) {
  return iterations <= 1
             ? std::string("ran once")
             : fmt::format("{:.3f} ms per run (median of {})", seconds * 1e3, iterations - 1);
}

} // namespace

int runBundle(const std::string &path, const Args &args) {
  for (const char *flag : {"--check", "--batch", "--target", "--arch", "--backend", "--precision",
                           "--profile", "--tuning", "--tuning-db", "--tuned-on", "--wgmma", "--tma",
                           "--persistent", "--shape", "--size-buckets", "--recompile-out-of-range"})
    if (args.has(flag))
      return usageError(
          "run", fmt::format("{} does not apply to a bundle (it is compiled already)", flag));
  auto seed = args.intValue("--seed", 0, 0);
  auto iterations = args.intValue("--iterations", 10, 1);
  if (const Error *error = firstError(seed, iterations))
    return usageError("run", error->message());
  auto batchSizesGiven = batchSizesFlag(args, {"--inputs", "--output"});
  if (!batchSizesGiven)
    return usageError("run", batchSizesGiven.error().message());
  const std::optional<std::vector<int64_t>> &batchSizes = *batchSizesGiven;
  auto start = std::chrono::steady_clock::now();
  auto loaded = runtime::bundle::loadBundle(path);
  double loadMs = millisecondsSince(start);
  if (!loaded)
    return reportError("run", loaded.error());
  CompiledModel &model = loaded->model;
  fmt::print("bundle: {} ({} for {})\n", path, loaded->code, loaded->meta.model);
  fmt::print("loaded {} kernels in {:.2f} ms{}\n", model.numKernels(), loadMs,
             loaded->weightsBound ? ", weights bound" : "");

  const runtime::LaunchPlan &plan = model.plan();
  if (!plan.symbols.empty()) {
    std::vector<std::string> buckets;
    for (const std::vector<int64_t> &bounds : model.sizeBucketBounds())
      buckets.push_back(fmt::format("{}", fmt::join(bounds, ",")));
    fmt::print("sizes:  {} ({} size bucket{}, up to {})\n", plan.symbols.front().str(),
               buckets.size(), buckets.size() == 1 ? "" : "s", fmt::join(buckets, ", "));
  }
  if (batchSizes && plan.symbols.size() != 1)
    return usageError("run", fmt::format("--batch-sizes needs a bundle with one size symbol; "
                                         "'{}' has {}",
                                         path, plan.symbols.size()));
  NamedTensors tensors = runtime::bundle::sampleTensors(plan, plan.inputs,
                                                        static_cast<uint64_t>(*seed));
  if (auto inputs = args.value("--inputs")) {
    auto read = io::loadSafetensors(*inputs);
    if (!read)
      return reportError("run", read.error());
    tensors = NamedTensors(read->begin(), read->end());
  } else if (!plan.symbols.empty() && !batchSizes) {
    fmt::print("note:   the seeded inputs take each size symbol's maximum (--batch-sizes runs "
               "others)\n");
  }
  if (auto params = args.value("--params")) {
    auto read = io::loadSafetensors(*params);
    if (!read)
      return reportError("run", read.error());
    if (auto bound = model.bindParams(NamedTensors(read->begin(), read->end())); !bound)
      return reportError("run", bound.error());
  } else if (!loaded->weightsBound && !plan.params.empty()) {
    fmt::print("note:   the bundle has no weights; running with seeded random parameters\n");
    if (auto bound = model.bindParams(runtime::bundle::sampleTensors(
            plan, plan.params, static_cast<uint64_t>(*seed) ^ 0x9e3779b97f4a7c15ULL));
        !bound)
      return reportError("run", bound.error());
  }

  if (batchSizes) {
    const ir::SizeSymbol &symbol = plan.symbols.front();
    for (int64_t size : *batchSizes) {
      if (size < symbol.min || size > symbol.max)
        return usageError("run", fmt::format("batch size {} is outside the bundle's range, {}",
                                             size, symbol.str()));
      std::vector<int64_t> sizes{size};
      NamedTensors inputs = runtime::bundle::sampleTensors(
          plan, plan.inputs, static_cast<uint64_t>(*seed) + static_cast<uint64_t>(size), false, {},
          sizes);
      auto ran = timedRuns(model, inputs, *iterations);
      if (!ran)
        return reportError("run", ran.error());
      fmt::print("batch {}: {}\n", size, timeText(ran->second, *iterations));
      for (const auto &[name, tensor] : ran->first)
        fmt::print("  output {}\n", runtime::bundle::summarizeTensor(name, tensor));
    }
    return kExitOk;
  }
  auto ran = timedRuns(model, tensors, *iterations);
  if (!ran)
    return reportError("run", ran.error());
  const NamedTensors &outputs = ran->first;
  for (const auto &[name, tensor] : outputs)
    fmt::print("output {}\n", runtime::bundle::summarizeTensor(name, tensor));
  if (*iterations > 1)
    fmt::print("time per run: {:.3f} ms (median of {})\n", ran->second * 1e3, *iterations - 1);
  if (auto path = args.value("--output"))
    if (auto saved = io::saveSafetensors(*path, io::TensorMap(outputs.begin(), outputs.end()));
        !saved)
      return reportError("run", saved.error());
  return kExitOk;
}

} // namespace kiln::tool
