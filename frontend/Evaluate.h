// evaluate(): runs a finished DSL graph through the reference interpreter.
#pragma once

#include "frontend/Graph.h"

namespace kiln {

/// Runs `graph` through the fp64 reference interpreter: `inputs` by name,
/// parameters from graph.paramValues(). Fails with the graph's first DSL
/// error, if any, before running anything. Returns the outputs by name.
Expected<NamedTensors> evaluate(const Graph &graph, const NamedTensors &inputs);

} // namespace kiln
