// The reference interpreter: runs a Graph in fp64 through the op table's
// reference functions, rounding every result to its dtype. The oracle every
// backend is tested against. A composite elementwise op (OpTable.h) has no
// reference: the interpreter runs its decomposition, each primitive rounded
// to its dtype, so for those ops the oracle models the decomposition's
// rounding rather than one exactly rounded result.
#pragma once

#include "ir/graph/Graph.h"
#include "support/HostTensor.h"

#include <map>
#include <span>
#include <string>

namespace kiln::ir {

using kiln::NamedTensors;

/// Runs `graph` on `inputsAndParams` (every input and parameter by name, no
/// other names, each with its declared dtype and shape) and returns each graph
/// output by name, as a HostTensor of the output's dtype. A symbolic graph
/// runs at the sizes its inputs give (bindSymbols, then specialize).
Expected<NamedTensors> interpret(const Graph &graph, const NamedTensors &inputsAndParams);

/// One node's value as `interpret` computes it from its operands' values: the
/// op's reference rounded to the result dtype, or for a composite elementwise
/// op its decomposition run node by node. Constant folding shares it, so
/// folding never changes a result.
Expected<RefTensor> evaluateNode(const Node &node, std::span<const RefTensor *const> operands);

} // namespace kiln::ir
