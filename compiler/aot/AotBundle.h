// Ahead-of-time bundles: a graph compiled for the CPU (a host shared object)
// or for GPU architectures (cubin and PTX each), with its launch plan,
// optional weights and tuning records, in one file that kiln_rt loads
// without LLVM or NVRTC (runtime/bundle/BundleLoader.h, docs/aot.md).
#pragma once

#include "codegen/Target.h"
#include "compiler/Compile.h"
#include "ir/graph/Graph.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <optional>
#include <string>
#include <vector>

namespace kiln::compiler {

struct AotOptions {
  /// Cpu or Cuda (Sim and Auto are not bundle targets).
  TargetKind target = TargetKind::Cpu;
  /// Cuda: the architectures to compile for, each lowered with its own schedules.
  std::vector<std::string> gpuArchs = {"sm_80", "sm_90a"};
  /// Cpu: the CPU the host code is compiled for; the host's when unset.
  std::optional<codegen::CpuTarget> cpuTarget;
  /// Precision, GPU backend, schedule choice and the kernel cache, as for compile()
  /// (its target, gpuArch and dumps are ignored).
  CompileOptions compile;
  /// Parameters to store and bind at load; each must be a parameter of the graph.
  NamedTensors weights;
  /// Tuning records as text, stored verbatim in the "tuning" section.
  std::string tuningRecords;
};

/// What a bundle write did, for `kiln aot`.
struct AotReport {
  std::string target;              ///< "cpu x86_64-pc-linux-gnu znver3", "cuda sm_80,sm_90a"
  int numKernels = 0;              ///< per architecture for cuda (the first one's)
  std::vector<std::string> notes;  ///< e.g. "sm_80: no cubin (ptxas unavailable: ...)"
  size_t bytes = 0;
  double seconds = 0;
};

/// The bundle's bytes.
Expected<std::string> buildBundle(const ir::Graph &graph, const AotOptions &options,
                                  AotReport *report = nullptr);

/// buildBundle written atomically to `path`: on any failure no file is left
/// (and an existing file at `path` is unchanged).
Expected<void> writeBundle(const ir::Graph &graph, const AotOptions &options,
                           const std::string &path, AotReport *report = nullptr);

} // namespace kiln::compiler
