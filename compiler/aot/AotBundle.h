// Ahead-of-time bundles: a graph compiled for the CPU (a host shared object; a graph with
// size symbols gets a plan per size bucket) or for GPU architectures (cubin and PTX each),
// with its launch plan,
// optional weights and tuning records, in one file that kiln_rt loads
// without LLVM or NVRTC (runtime/bundle/BundleLoader.h, docs/aot.md).
#pragma once

#include "codegen/Target.h"
#include "compiler/Compile.h"
#include "ir/graph/Graph.h"
#include "runtime/tuning/TuningRecord.h"
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
  /// Precision, GPU backend, schedule choice, tuning records and the kernel
  /// cache, as for compile() (its target, gpuArch and dumps are ignored). The
  /// tuning records the lowering used go into the bundle's "tuning" section.
  CompileOptions compile;
  /// Parameters to store and bind at load. When given they must be complete:
  /// every parameter of the graph, with its dtype and shape, and nothing else
  /// (a bundle whose weights miss one could not be loaded). Unset: no weights;
  /// each run binds the parameters.
  std::optional<NamedTensors> weights;
};

/// What a bundle write did, for `kiln aot`.
struct AotReport {
  std::string target;              ///< "cpu x86_64-pc-linux-gnu znver3", "cuda sm_80,sm_90a"
  int numKernels = 0;              ///< per architecture for cuda (the first one's)
  std::vector<std::string> notes;  ///< e.g. "sm_80: no cubin (ptxas unavailable: ...)"
  /// Cpu, a graph with a size symbol: its buckets ("N in [1, 64]: 4 buckets, N <= 1, 8, ...").
  std::string sizeBuckets;
  size_t bytes = 0;
  double seconds = 0;
  /// The tuning records that chose schedules (each once), as the bundle stores them.
  std::vector<tuning::TuningRecord> records;
  /// What the tuning database did, per target: "cpu: 2 of 5 groups from ...".
  std::vector<std::string> tuning;
};

/// The bundle's bytes.
Expected<std::string> buildBundle(const ir::Graph &graph, const AotOptions &options,
                                  AotReport *report = nullptr);

/// buildBundle written atomically to `path`: on any failure no file is left
/// (and an existing file at `path` is unchanged).
Expected<void> writeBundle(const ir::Graph &graph, const AotOptions &options,
                           const std::string &path, AotReport *report = nullptr);

} // namespace kiln::compiler
