// Times a compiled model's kernels with the run profile's device events, and
// the statistics the sections share.
#pragma once

#include "compiler/Compile.h"
#include "frontend/Graph.h"
#include "support/Median.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace kiln::bench {

struct KernelTiming {
  double medianMs = 0; ///< of the per-run sums of the kernel events
  double minMs = 0;
  int64_t bytesMoved = 0; ///< per run, the sum of the steps' PlanStep::bytesMoved
  int64_t flops = 0;      ///< per run, the sum of the steps' PlanStep::flops
  /// The inputs, parameters and outputs: what any implementation must move
  /// at least (the arena's intermediates are not counted).
  int64_t boundaryBytes = 0;
  int kernels = 0;
  int runs = 0;
};

/// Runs `model` once untimed, then `runs` times with a profile; each run's
/// kernel time is the sum of its Kernel events (device events around each
/// launch), so host-device copies and host work are left out.
Expected<KernelTiming> timeKernels(const CompiledModel &model, const NamedTensors &tensors,
                                   int runs);

/// Finalizes `graph` and compiles it with `options`.
Expected<CompiledModel> compileGraph(Graph &graph, const CompileOptions &options);

/// Seeded normal values for every graph input.
NamedTensors randomInputs(const ir::Graph &graph, uint64_t seed);

/// Compares every output with the fp64 reference interpreter on `tensors`
/// (inputs and parameters): "ok", or what differs.
std::string checkAgainstReference(const ir::Graph &graph, const NamedTensors &tensors,
                                  const NamedTensors &outputs);

/// "1.5 GiB", "16 MiB", "512 KiB".
std::string formatBytes(int64_t bytes);

/// Calls body(chunk, begin, end) for kChunks slices of [0, count), on up to 16
/// threads: the host side of an 8192^2 operand (67M elements) would otherwise
/// take seconds. The slices do not depend on the number of threads, so a
/// seeded fill is the same on every machine.
constexpr int kChunks = 64;
template <typename Body> void forChunks(int64_t count, const Body &body) {
  int threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
  std::atomic<int> next = 0;
  auto work = [&] {
    for (int chunk = next++; chunk < kChunks; chunk = next++)
      body(chunk, count * chunk / kChunks, count * (chunk + 1) / kChunks);
  };
  std::vector<std::jthread> workers;
  for (int t = 1; t < threads; ++t)
    workers.emplace_back(work);
  work();
}

/// kiln's output against a library's (cuBLAS, cuDNN `configuration`) over every element:
/// "ok", or the NaN and inf counts of each side, or max |kiln - library| / max |library| over
/// the elements finite on both (stored in `relativeDifference`) when it exceeds `bound`.
std::string compareWithLibrary(const HostTensor &kiln, const HostTensor &library,
                               std::string_view name, std::string_view configuration, double bound,
                               double &relativeDifference);

} // namespace kiln::bench
