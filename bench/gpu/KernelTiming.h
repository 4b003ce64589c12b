// Times a compiled model's kernels with the run profile's device events, and
// the statistics the sections share.
#pragma once

#include "compiler/Compile.h"
#include "frontend/Graph.h"
#include "support/Median.h"

#include <string>
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

} // namespace kiln::bench
