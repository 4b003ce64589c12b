// The order the launch plan runs a program's fusion groups in: each collective
// as early as its operands allow, so that communication overlaps the kernels
// after it (docs/distributed.md, "Overlap").
#pragma once

#include "passes/graph/Fusion.h"

#include <cstddef>
#include <vector>

namespace kiln::compiler {

/// Indices into `fusion.groups`, in launch order. Without collectives, the
/// plan's own order. With them, a topological order that runs the cone of
/// each collective (the groups it transitively reads) before anything else
/// still pending, collectives in their own order: the first bucket's
/// gradients, their all_reduce, then the backward pass that the next bucket
/// needs, and so on; groups no collective reads (slices back, the update) come
/// last. Ties keep the fusion plan's order.
std::vector<size_t> collectiveLaunchOrder(const passes::FusionPlan &fusion);

} // namespace kiln::compiler
