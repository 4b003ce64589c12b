// Kernel timing from run profiles, and the helpers every section shares.
#include "bench/gpu/KernelTiming.h"

#include "ir/graph/Interpreter.h"
#include "support/Tolerance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kiln::bench {

Expected<KernelTiming> timeKernels(const CompiledModel &model, const NamedTensors &tensors,
                                   int runs) {
  // The first run loads kernels and allocates the arena: not timed.
  KILN_TRY_VOID(model.run(tensors));
  KernelTiming timing;
  for (const runtime::PlanStep &step : model.plan().steps) {
    timing.bytesMoved += step.bytesMoved;
    timing.flops += step.flops;
  }
  for (const runtime::PlanBuffer &buffer : model.plan().buffers)
    if (buffer.storage == runtime::Storage::Input || buffer.storage == runtime::Storage::Param ||
        buffer.storage == runtime::Storage::Output)
      timing.boundaryBytes += buffer.bytes;
  timing.kernels = static_cast<int>(model.plan().steps.size());
  std::vector<double> perRun;
  for (int run = 0; run < runs; ++run) {
    runtime::RunProfile profile;
    KILN_TRY_VOID(model.run(tensors, RunOptions{.profile = &profile}));
    double kernelMs = 0;
    int kernelEvents = 0;
    for (const runtime::ProfileEvent &event : profile.events)
      if (event.category == runtime::ProfileCategory::Kernel) {
        kernelMs += event.durationMs;
        ++kernelEvents;
      }
    // A profile that misses kernels would make a slow model look fast.
    if (kernelEvents != timing.kernels)
      return makeError(ErrorCode::Unsupported,
                       fmt::format("the run profile holds {} kernel events for {} plan steps",
                                   kernelEvents, timing.kernels));
    perRun.push_back(kernelMs);
  }
  timing.runs = runs;
  timing.medianMs = median(perRun);
  timing.minMs = perRun.empty() ? 0 : *std::min_element(perRun.begin(), perRun.end());
  return timing;
}

Expected<CompiledModel> compileGraph(Graph &graph, const CompileOptions &options) {
  KILN_TRY_VOID(graph.finalize());
  return compile(graph.ir(), options);
}

NamedTensors randomInputs(const ir::Graph &graph, uint64_t seed) {
  Rng rng(seed);
  NamedTensors inputs;
  for (const ir::Value *input : graph.inputs())
    inputs.emplace(input->name(),
                   HostTensor::randomNormal(input->type().dtype, input->type().shape, rng));
  return inputs;
}

std::string checkAgainstReference(const ir::Graph &graph, const NamedTensors &tensors,
                                  const NamedTensors &outputs) {
  auto expected = ir::interpret(graph, tensors);
  if (!expected)
    return fmt::format("the reference failed: {}", expected.error().message());
  for (const auto &[name, want] : *expected) {
    auto got = outputs.find(name);
    if (got == outputs.end())
      return fmt::format("output {} is missing", name);
    Comparison comparison = compareTensors(got->second, want, toleranceFor(want.dtype()));
    if (!comparison.ok)
      return fmt::format("{} differs from the reference in {} elements (max abs error {:.3g}); "
                         "first: {}",
                         name, comparison.mismatches, comparison.maxAbsError,
                         comparison.firstMismatchStr);
  }
  return "ok";
}

std::string formatBytes(int64_t bytes) {
  if (bytes >= (int64_t(1) << 30) && bytes % (int64_t(1) << 30) == 0)
    return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (int64_t(1) << 30))
    return fmt::format("{:.2f} GiB", double(bytes) / double(int64_t(1) << 30));
  if (bytes >= (int64_t(1) << 20))
    return fmt::format("{:.0f} MiB", double(bytes) / double(1 << 20));
  return fmt::format("{:.0f} KiB", double(bytes) / 1024.0);
}

std::string compareWithLibrary(const HostTensor &kiln, const HostTensor &library,
                               std::string_view name, std::string_view configuration, double bound,
                               double &relativeDifference) {
  struct Agreement {
    double maxDifference = 0, maxMagnitude = 0; ///< over the elements finite on both sides
    int64_t kilnNonFinite = 0, libraryNonFinite = 0;
  };
  std::vector<Agreement> chunks(kChunks);
  forChunks(kiln.numElements(), [&](int chunk, int64_t begin, int64_t end) {
    Agreement &part = chunks[chunk];
    for (int64_t i = begin; i < end; ++i) {
      double got = kiln.getDouble(i), want = library.getDouble(i);
      // Counted apart: std::max would pass a NaN (an unwritten element) over silently.
      part.kilnNonFinite += !std::isfinite(got);
      part.libraryNonFinite += !std::isfinite(want);
      if (std::isfinite(got) && std::isfinite(want)) {
        part.maxDifference = std::max(part.maxDifference, std::abs(got - want));
        part.maxMagnitude = std::max(part.maxMagnitude, std::abs(want));
      }
    }
  });
  Agreement total;
  for (const Agreement &part : chunks) {
    total.maxDifference = std::max(total.maxDifference, part.maxDifference);
    total.maxMagnitude = std::max(total.maxMagnitude, part.maxMagnitude);
    total.kilnNonFinite += part.kilnNonFinite;
    total.libraryNonFinite += part.libraryNonFinite;
  }
  if (total.kilnNonFinite || total.libraryNonFinite)
    return fmt::format("NaN or inf in {} elements of kiln's output and {} of {}'s",
                       total.kilnNonFinite, total.libraryNonFinite, name);
  relativeDifference =
      total.maxMagnitude > 0 ? total.maxDifference / total.maxMagnitude : total.maxDifference;
  if (!(relativeDifference <= bound))
    return fmt::format("kiln and {}{} differ by {:.3g} of the output's magnitude (bound {:.0e})",
                       name, configuration.empty() ? "" : fmt::format(" ({})", configuration),
                       relativeDifference, bound);
  return "ok";
}

} // namespace kiln::bench
