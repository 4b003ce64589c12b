// The stages of a compile that every target shares: graph passes, fusion, and
// lowering each group with its schedule (compiler-internal; kiln::compile and
// kiln::compileGpuKernels put them in order).
#pragma once

#include "codegen/Target.h"
#include "compiler/Compile.h"
#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/Lower.h"

#include <memory>
#include <optional>
#include <ostream>
#include <variant>
#include <vector>

namespace kiln::compiler {

/// The machine kernels are lowered for.
using LoweringTarget = std::variant<codegen::CpuTarget, codegen::GpuTarget>;

/// A graph after the graph passes, fused and lowered.
struct LoweredProgram {
  std::unique_ptr<ir::Graph> graph;
  passes::FusionPlan fusion;
  /// One entry per fusion group: its kernel, or nullopt for Alias and Constant groups.
  std::vector<std::optional<lower::LoweredKernel>> groupKernels;
  /// The same kernels in launch order.
  std::vector<kir::Kernel> kernels;
};

/// Graph passes, fusion and lowering (with options.chooseSchedule or the
/// target's default schedules, then the kernel passes), printing the graph,
/// fused and kernel dumps to `dump` and filling the report's counts and times.
Expected<LoweredProgram> lowerProgram(const ir::Graph &userGraph, const CompileOptions &options,
                                      const LoweringTarget &target, std::ostream &dump,
                                      CompileReport &report);

} // namespace kiln::compiler
