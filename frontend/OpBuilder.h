// Shared plumbing of the op functions (private to frontend/): find the graph
// an op belongs to from its operands and add the node there.
#pragma once

#include "frontend/Graph.h"

#include <source_location>
#include <vector>

namespace kiln::detail {

/// The graph of the first non-empty operand, or nullptr when all are empty.
Graph *graphOf(const std::vector<Tensor> &operands);

/// Adds `kind` on the operands' graph. With only empty operands there is no
/// graph to record an error in: the result is empty too, and the graph output
/// that finally consumes it reports the problem.
Tensor buildOp(ir::OpKind kind, const std::vector<Tensor> &operands, ir::AttrMap attrs,
               const std::source_location &loc);

/// Records `message` (an InvalidArgument or ShapeMismatch) on `like`'s graph
/// and returns a poisoned Tensor; a no-op returning `like` when it is already
/// poisoned or empty.
Tensor failOn(const Tensor &like, ErrorCode code, std::string message,
              const std::source_location &loc);

} // namespace kiln::detail
