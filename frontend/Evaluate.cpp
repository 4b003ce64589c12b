// evaluate(): binds inputs and parameter values and calls ir::interpret.
#include "frontend/Evaluate.h"

#include <fmt/format.h>

namespace kiln {

Expected<NamedTensors> evaluate(const Graph &graph, const NamedTensors &inputs) {
  KILN_TRY_VOID(graph.finalize());
  NamedTensors bound = graph.paramValues();
  for (const auto &[name, value] : inputs) {
    if (bound.contains(name))
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("evaluate: '{}' is a parameter of graph '{}', not an input; "
                                   "set it with Graph::setParamValue",
                                   name, graph.name()));
    bound.emplace(name, value);
  }
  return ir::interpret(graph.ir(), bound);
}

} // namespace kiln
