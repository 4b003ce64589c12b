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

int runBundle(const std::string &path, const Args &args) {
  for (const char *flag : {"--check", "--batch", "--target", "--arch", "--backend", "--precision",
                           "--profile", "--tuning", "--tuning-db", "--tuned-on", "--wgmma",
                           "--tma", "--persistent", "--shape"})
    if (args.has(flag))
      return usageError(
          "run", fmt::format("{} does not apply to a bundle (it is compiled already)", flag));
  auto seed = args.intValue("--seed", 0, 0);
  auto iterations = args.intValue("--iterations", 10, 1);
  if (const Error *error = firstError(seed, iterations))
    return usageError("run", error->message());
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
  NamedTensors tensors = runtime::bundle::sampleTensors(plan, plan.inputs,
                                                        static_cast<uint64_t>(*seed));
  if (auto inputs = args.value("--inputs")) {
    auto read = io::loadSafetensors(*inputs);
    if (!read)
      return reportError("run", read.error());
    tensors = NamedTensors(read->begin(), read->end());
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

  auto outputs = model.run(tensors);
  if (!outputs)
    return reportError("run", outputs.error());
  std::vector<double> seconds;
  for (int64_t i = 1; i < *iterations; ++i) {
    auto runStart = std::chrono::steady_clock::now();
    if (auto again = model.run(tensors); !again)
      return reportError("run", again.error());
    seconds.push_back(secondsSince(runStart));
  }
  for (const auto &[name, tensor] : *outputs)
    fmt::print("output {}\n", runtime::bundle::summarizeTensor(name, tensor));
  if (!seconds.empty()) {
    std::sort(seconds.begin(), seconds.end());
    fmt::print("time per run: {:.3f} ms (median of {})\n", seconds[seconds.size() / 2] * 1e3,
               seconds.size());
  }
  if (auto path = args.value("--output"))
    if (auto saved = io::saveSafetensors(*path, io::TensorMap(outputs->begin(), outputs->end()));
        !saved)
      return reportError("run", saved.error());
  return kExitOk;
}

} // namespace kiln::tool
