// The deterministic printer of the graph IR's text form (grammar in docs/ir.md).
#pragma once

#include "ir/graph/Graph.h"

#include <string>

namespace kiln::ir {

/// Prints `graph` in its canonical text form: inputs, then parameters, then
/// nodes in Graph::topologicalOrder() numbered %0, %1, ..., then outputs; every
/// attribute (defaults included) sorted by name. The text depends only on the
/// graph's contents, so it serves golden tests and cache keys, and
/// parseGraph(printGraph(g)) prints back to the same text.
std::string printGraph(const Graph &graph);

} // namespace kiln::ir
