// The stages of a compile that every target shares: graph passes, fusion, and
// lowering each group with its schedule (compiler-internal; kiln::compile and
// kiln::compileGpuKernels put them in order).
#pragma once

#include "codegen/Target.h"
#include "compiler/Compile.h"
#include "compiler/tuning/LazyFingerprint.h"
#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/Lower.h"
#include "runtime/tuning/TuningRecord.h"

#include <memory>
#include <optional>
#include <ostream>
#include <variant>
#include <vector>

namespace kiln::compiler {

/// The machine kernels are lowered for (defined with the lowering).
using LoweringTarget = lower::LoweringTarget;

/// A graph after the graph passes, fused and lowered.
struct LoweredProgram {
  std::unique_ptr<ir::Graph> graph;
  passes::FusionPlan fusion;
  /// One entry per fusion group: its kernel, or nullopt for Alias and Constant groups.
  std::vector<std::optional<lower::LoweredKernel>> groupKernels;
  /// The same kernels in launch order.
  std::vector<kir::Kernel> kernels;
  /// One entry per fusion group: the tuning record found for it, if any. A
  /// record with backend "kiln" gave the group its schedule; one naming a
  /// library ("cudnn") is kept here for the CUDA path to call the library, and
  /// the group is lowered with the default schedule meanwhile.
  std::vector<std::optional<tuning::TuningRecord>> groupRecords;
};

/// Graph passes, fusion and lowering (with options.chooseSchedule, else the
/// tuning record for the group on the target with fingerprint
/// `targetFingerprint` (options.tuning; computed only if a database is there to
/// look in), else the target's default schedule;
/// then the kernel passes), printing the graph, fused and kernel dumps to
/// `dump` and filling the report's counts, times and tuning lines.
Expected<LoweredProgram> lowerProgram(const ir::Graph &userGraph, const CompileOptions &options,
                                      const LoweringTarget &target,
                                      const LazyFingerprint &targetFingerprint, std::ostream &dump,
                                      CompileReport &report);

} // namespace kiln::compiler
