// Deep copy of a graph, so a compiler pipeline can rewrite its own copy and
// leave the user's graph untouched.
#pragma once

#include "ir/graph/Graph.h"

#include <memory>

namespace kiln::ir {

/// A copy of `graph` with the same names, attributes and source locations.
/// Nodes are created in topological order, so their ids may differ.
Expected<std::unique_ptr<Graph>> cloneGraph(const Graph &graph);

} // namespace kiln::ir
