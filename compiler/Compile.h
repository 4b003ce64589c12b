// kiln::compile: the whole pipeline from a graph to a runnable model —
// graph passes, fusion, schedules, lowering, kernel passes, codegen, memory
// planning and the launch plan.
#pragma once

#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/Schedule.h"
#include "runtime/CompiledModel.h"
#include "support/Error.h"

#include <functional>
#include <optional>
#include <ostream>
#include <string>

namespace kiln {

/// Where a model runs. Auto picks the best device present (the CPU until the
/// GPU runtime lands) and says why when it falls back.
enum class TargetKind { Cpu, Auto };

/// Intermediate forms `compile` can print, as bit flags.
enum DumpFlags : unsigned {
  kDumpGraph = 1u << 0,  ///< the graph after the graph passes
  kDumpFused = 1u << 1,  ///< the fusion groups and their schedules
  kDumpKernel = 1u << 2, ///< every kernel's kernel IR after the kernel passes
  kDumpLlvm = 1u << 3,   ///< every kernel's optimized LLVM IR
};

struct CompileOptions {
  TargetKind target = TargetKind::Auto;
  /// Which forms to print to `dumpStream` (stderr when null).
  unsigned dump = 0;
  std::ostream *dumpStream = nullptr;
  /// Fill CompileReport::fusedGraphDot with a Graphviz picture of the groups.
  bool fusedGraphDot = false;
  /// Verify the graph after every graph pass.
  bool verifyEach = true;
  /// Overrides the heuristic schedule of a group (the autotuner's hook);
  /// returning nullopt keeps the default.
  std::function<std::optional<lower::Schedule>(const ir::Graph &, const passes::FusionGroup &)>
      chooseSchedule;
};

/// What happened during a compile, for `kiln compile` and the benchmarks.
struct CompileReport {
  std::string target;         ///< e.g. "cpu x86_64 znver4 (avx512)"
  std::string fallbackReason; ///< why Auto did not pick a GPU, or empty
  int numGroups = 0;
  int numKernels = 0;
  double graphPassSeconds = 0, loweringSeconds = 0, codegenSeconds = 0, totalSeconds = 0;
  std::string fusedGraphDot; ///< when CompileOptions::fusedGraphDot
};

/// Compiles `graph` (left unchanged). Errors name the node, group or kernel at fault.
Expected<CompiledModel> compile(const ir::Graph &graph, const CompileOptions &options = {},
                                CompileReport *report = nullptr);

} // namespace kiln
