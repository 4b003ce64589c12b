// The graph verifier: IR invariants that every pass must preserve.
#pragma once

#include "ir/graph/Graph.h"

namespace kiln::ir {

/// Checks that every node's operands are live values of this graph, use lists
/// match operands, attributes match the op's schema, each stored result type
/// equals what inference gives now, the graph is acyclic, names are unique and
/// there is at least one output. The first failure is returned, located at the
/// node's source location.
Expected<void> verifyGraph(const Graph &graph);

} // namespace kiln::ir
