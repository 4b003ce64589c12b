// Builds a launch plan from a fused, lowered graph: one buffer per
// materialized value and workspace, lifetimes, in-place reuse, the arena plan.
#pragma once

#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/Lower.h"
#include "runtime/LaunchPlan.h"

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace kiln::compiler {

/// How values computed from parameters alone are placed.
enum class DerivedValues {
  PerRun, ///< in the arena, computed by every run (device plans: their executor has no
          ///< derived block yet)
  Kept,   ///< in the derived block, computed again only when a parameter changes (host plans)
};

/// `kernels[i]` is group i's kernel (nullopt for Alias and Constant groups);
/// `lookup` finds a compiled kernel's entry by name. Steps follow
/// collectiveLaunchOrder: the plan's order unless the graph has collectives.
Expected<runtime::LaunchPlan>
buildLaunchPlan(const ir::Graph &graph, const passes::FusionPlan &plan,
                const std::vector<std::optional<lower::LoweredKernel>> &kernels,
                const std::function<runtime::KernelEntry(std::string_view)> &lookup,
                DerivedValues derived);

/// The value of a `constant` node as a tensor; an error naming the node when its size cannot
/// be allocated (a constant's shape comes from the user).
Expected<HostTensor> constantTensor(const ir::Node &node);

/// Whether `group`'s kernel may write its output over `input`: every node is
/// elementwise at the output's shape, so element i is read before it is
/// written and by the same iteration.
bool canWriteInPlace(const passes::FusionGroup &group, const ir::Value *input);

} // namespace kiln::compiler
