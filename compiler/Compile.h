// kiln::compile: the whole pipeline from a graph to a runnable model —
// graph passes, fusion, schedules, lowering, kernel passes, codegen, memory
// planning and the launch plan.
#pragma once

#include "compiler/Devices.h"
#include "compiler/tuning/LazyFingerprint.h"
#include "ir/graph/Graph.h"
#include "ir/kernel/KernelIR.h"
#include "passes/graph/Fusion.h"
#include "passes/graph/PrecisionPolicy.h"
#include "passes/kernel/Passes.h"
#include "passes/lower/Lower.h"
#include "passes/lower/Schedule.h"
#include "runtime/CompiledModel.h"
#include "support/Error.h"

#include <cstddef>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// Where a model runs. Cuda runs on GPU 0 through the CUDA driver (an
/// Unavailable error saying why when there is none). Auto picks the GPU when
/// there is one and the CPU otherwise, saying why in the report. Sim lowers for
/// a GPU and runs every kernel on the SIMT simulator.
enum class TargetKind { Cpu, Sim, Cuda, Auto };

/// "cpu", "sim", "cuda", "auto".
std::string_view targetKindName(TargetKind kind);
/// The inverse of targetKindName; an unknown name is an error listing the valid ones.
Expected<TargetKind> parseTargetKind(std::string_view name);

/// How GPU kernels become PTX: LLVM's NVPTX backend, or CUDA C through NVRTC.
enum class GpuBackend { Llvm, Nvrtc };

/// Intermediate forms `compile` can print, as bit flags.
enum DumpFlags : unsigned {
  kDumpGraph = 1u << 0,  ///< the graph after the graph passes
  kDumpFused = 1u << 1,  ///< the fusion groups and their schedules
  kDumpKernel = 1u << 2, ///< every kernel's kernel IR after the kernel passes
  kDumpLlvm = 1u << 3,   ///< every kernel's optimized LLVM IR (host or NVPTX)
  kDumpPtx = 1u << 4,    ///< GPU targets: the PTX module
  kDumpCuda = 1u << 5,   ///< GPU targets: the CUDA C source
};

/// Whether compile() applies the tuning database's records (docs/tuning.md).
/// Off: heuristic schedules only. Use: a group with a usable record for this
/// target and kiln is lowered with the record's schedule, the others with the
/// heuristic. Replay: like Use, but every group with more than one candidate
/// schedule must have a usable record, so a build is reproducible.
enum class TuningMode { Off, Use, Replay };

/// "off", "use", "replay".
std::string_view tuningModeName(TuningMode mode);
/// The inverse of tuningModeName; an unknown name is an error listing the valid ones.
Expected<TuningMode> parseTuningMode(std::string_view name);
/// The mode $KILN_TUNING names (Use when it is unset or empty); any other
/// value is an InvalidArgument naming the variable and the valid modes.
Expected<TuningMode> tuningModeFromEnvironment();
/// tuningModeFromEnvironment(), or Use when $KILN_TUNING is not a mode: a
/// default member initializer cannot fail, so programs check the variable
/// once up front with tuningModeFromEnvironment (kiln refuses a bad one).
TuningMode defaultTuningMode();

/// The architecture GPU kernels are compiled for when no GPU says otherwise (H100).
inline constexpr std::string_view kDefaultGpuArch = "sm_90a";

struct CompileOptions {
  TargetKind target = TargetKind::Auto;
  /// Sim and Cuda: the GPU architecture kernels are lowered for ("sm_80" ...
  /// "sm_90a"). Empty: the GPU's own for Cuda and Auto, kDefaultGpuArch for
  /// Sim and for GPU code compiled without a GPU (compileGpuKernels).
  std::string gpuArch;
  /// Cuda (and the PTX/CUDA dumps of Sim): which GPU backend compiles the kernels.
  GpuBackend gpuBackend = GpuBackend::Llvm;
  /// Which forms to print to `dumpStream` (stderr when null).
  unsigned dump = 0;
  std::ostream *dumpStream = nullptr;
  /// Fill CompileReport::fusedGraphDot with a Graphviz picture of the groups.
  bool fusedGraphDot = false;
  /// How contractions compute (docs/precision.md): applied by the "precision"
  /// pass after the graph passes have decomposed attention, before fusion.
  passes::PrecisionPolicy precision = passes::PrecisionPolicy::Fp32;
  /// CPU: run the NCHW convolutions of one group that feed one another as NHWC,
  /// the transposes sunk through the graph until they cancel between them (the
  /// "layout-cpu" pass, docs/lowering.md). Off: convolutions keep the layout they
  /// were built in.
  bool cpuNhwc = true;
  /// CPU, fp32 policy: run f32 3x3 stride-1 convolutions with many channels, NCHW or
  /// NHWC, as Winograd F(2x2, 3x3) (the "winograd" pass, docs/winograd.md). Off:
  /// every convolution takes the direct or im2col kernel.
  bool winograd = true;
  /// Verify the graph after every graph pass.
  bool verifyEach = true;
  /// Run the kernel-IR verifier on each lowered kernel and after every kernel pass
  /// (docs/kernel-ir.md). Defaults to the process setting: on in debug builds and tests, off in
  /// release, KILN_VERIFY_KERNEL_IR=1/0 (kir::verifyKernelPassesEnabled).
  bool verifyKernels = kir::verifyKernelPassesEnabled();
  /// Reuse and keep compiled kernels in the kernel cache (docs/caching.md):
  /// GPU modules (PTX and cubin) and the CPU target's host object code.
  bool useKernelCache = true;
  /// The kernel cache's directory; empty means $KILN_CACHE_DIR, else
  /// $XDG_CACHE_HOME/kiln, else ~/.cache/kiln ($KILN_CACHE=off disables that default).
  std::string kernelCacheDir;
  /// Whether tuning records choose schedules (TuningMode); Use unless $KILN_TUNING says otherwise.
  TuningMode tuning = defaultTuningMode();
  /// The tuning database; empty means tuning::TuningDatabase::defaultPath()
  /// ($KILN_TUNING_DB, else tuning.sqlite in the kernel cache's root). Use never
  /// creates it: a missing file means no records.
  std::string tuningDbPath;
  /// GPU code compiled without a GPU (compileGpuKernels, AOT bundles): whose
  /// records to use when the database holds records of several real devices
  /// of the architecture, as a piece of the device's fingerprint (docs/tuning.md).
  std::string gpuTuningDevice;
  /// A graph with a size symbol, on the CPU (docs/dynamic-shapes.md): the upper bounds of its
  /// size buckets. Each bucket is compiled with schedules chosen for its bound, and a run
  /// takes the smallest bucket that holds its size. nullopt: the symbol's least value, the
  /// powers of two above it and its maximum. A listed bound must lie in the symbol's range;
  /// the maximum is always a bucket, so an empty list gives one bucket. Graphs with one size
  /// symbol only (more take one bucket; a list for them is an error).
  std::optional<std::vector<int64_t>> sizeBuckets;
  /// A graph with size symbols, on the CPU: a run with a size outside a symbol's range compiles
  /// the model again for a range that holds it instead of failing (CompiledModel::
  /// setSizeRecompiler; docs/dynamic-shapes.md, decision 15), with these options (dumps off);
  /// each recompile is recorded and logged, one line, to `recompileLog` (stderr when null).
  /// What the options point to (chooseSchedule's captures, recompileLog) must outlive the model.
  bool recompileOutOfRange = false;
  std::ostream *recompileLog = nullptr;
  /// Overrides the heuristic schedule of a group (the autotuner's hook);
  /// returning nullopt keeps the default. It wins over tuning records.
  std::function<std::optional<lower::Schedule>(const ir::Graph &, const passes::FusionGroup &)>
      chooseSchedule;
};

/// What happened during a compile, for `kiln compile` and the benchmarks.
struct CompileReport {
  std::string target;         ///< e.g. "cpu x86_64 znver4 (avx512)", "sim sm_90a"
  std::string fallbackReason; ///< why Auto did not pick a GPU, or empty
  int numGroups = 0;
  int numKernels = 0;
  /// Of numKernels, the preludes that pack a weight for its GEMM (LoweredKernel::prelude): a
  /// host model runs them once per weight value, not in every run.
  int numPreludeKernels = 0;
  double graphPassSeconds = 0, loweringSeconds = 0, codegenSeconds = 0, totalSeconds = 0;
  std::string fusedGraphDot; ///< when CompileOptions::fusedGraphDot
  /// What the kernel cache did with the compiled kernels: "hit (memory)", "hit
  /// (disk)", "miss (written to <dir>)", "miss (not written)", "miss (memory
  /// only: ...)", "bypassed (...)", "off"; empty when no code was made (sim).
  std::string kernelCache;
  /// What the tuning database did, one line: "3 of 7 groups from /path/tuning.sqlite",
  /// "off", "no database (/path/tuning.sqlite does not exist)".
  std::string tuning;
  /// One line per group lowered with (or holding) a tuning record: "group 2
  /// (contraction matmul 24x40 * 40x16): matmul mc=... [kiln, 1.3x, tuned 2026-11-26T14:00:00Z]".
  std::vector<std::string> tuningRecords;
  /// A symbolic graph's size buckets, one line: "N in [1, 64]: 4 buckets, N <= 1, 8, 32, 64
  /// (2 more ran the kernels of a larger one); 61 distinct kernels of 150 lowered"; empty for
  /// a static graph.
  std::string sizeBuckets;
  /// Things the user should know that did not stop the compile (a cache entry
  /// rejected as corrupt, a cache directory that cannot be written, a tuning
  /// record whose schedule could not be used).
  std::vector<std::string> warnings;
};

/// The machine compile() makes a model for, decided from the options alone: Sim lowers for
/// options.gpuArch (kDefaultGpuArch when empty); Cuda and Auto for GPU 0 when the driver
/// opens one kiln can generate code for; Auto falls back to the CPU, saying why. Tools that
/// lower as compile() does without compiling (kiln.groups in Python) take the same choice.
struct TargetChoice {
  TargetKind kind = TargetKind::Cpu; ///< Cpu, Sim or Cuda: never Auto
  lower::LoweringTarget target;      ///< what the kernels are lowered for
  /// Cuda: the device that runs the model.
  std::optional<compiler::DeviceHandle<runtime::cuda::CudaDevice>> cudaDevice;
  std::string fallbackReason; ///< why Auto did not pick a GPU, or empty
  /// The target's tuning fingerprint (a GPU's names its device), made on first use.
  compiler::LazyFingerprint fingerprint{std::string()};
};

/// compile()'s choice of machine. An Unavailable error saying why when options.target is
/// Cuda and no usable GPU is there; an error for an unknown options.gpuArch.
Expected<TargetChoice> chooseTarget(const CompileOptions &options);

/// Compiles `graph` (left unchanged). Errors name the node, group or kernel at fault.
Expected<CompiledModel> compile(const ir::Graph &graph, const CompileOptions &options = {},
                                CompileReport *report = nullptr);

/// A graph's GPU kernels, compiled but not loaded: what `kiln compile --target
/// cuda` shows and what the CUDA runtime will load.
struct GpuKernels {
  std::string arch;                 ///< e.g. "sm_90a"
  std::vector<kir::Kernel> kernels; ///< after the kernel passes, in launch order
  std::string ptx;                  ///< one module with every kernel (empty if no kernel)
  /// The module assembled for `arch` (NVRTC's, or ptxas's for the LLVM
  /// backend); empty when ptxas is unavailable, and the driver JITs the PTX.
  std::vector<std::byte> cubin;
};

/// Lowers `graph` for options.gpuArch and compiles its kernels to PTX with
/// options.gpuBackend, printing the requested dumps.
Expected<GpuKernels> compileGpuKernels(const ir::Graph &graph, const CompileOptions &options = {},
                                       CompileReport *report = nullptr);

} // namespace kiln
