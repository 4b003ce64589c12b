// The reference interpreter: runs a Graph in fp64 through the op table's
// reference functions, rounding every result to its dtype. The oracle every
// backend is tested against.
#pragma once

#include "ir/graph/Graph.h"
#include "support/HostTensor.h"

#include <map>
#include <string>

namespace kiln::ir {

using kiln::NamedTensors;

/// Runs `graph` on `inputsAndParams` (every input and parameter by name, no
/// other names, each with its declared dtype and shape) and returns each graph
/// output by name, as a HostTensor of the output's dtype.
Expected<NamedTensors> interpret(const Graph &graph, const NamedTensors &inputsAndParams);

} // namespace kiln::ir
