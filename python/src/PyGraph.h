// The Python face of a graph: kiln.Graph (a DSL Graph, or an IR graph parsed from text) and
// kiln.Tensor (a DSL Tensor that keeps its graph alive), and the wrapper through which every
// binding that builds nodes reports a failed DSL call at the user's Python line.
#pragma once

#include "PythonErrors.h"

#include "frontend/Graph.h"
#include "ir/graph/Graph.h"

#include <memory>
#include <optional>
#include <source_location>

namespace kiln::python {

/// What the bindings pass as a DSL call's std::source_location: none. The call that fails is
/// reported at the Python line (buildOn), and one cannot make a std::source_location of a
/// Python line, so nodes built from Python name no location rather than the binding's.
inline constexpr std::source_location kNoSourceLocation{};

struct PyGraph {
  /// Built with the DSL; null for a graph parsed from IR text.
  std::unique_ptr<Graph> dsl;
  /// Parsed from IR text (kiln.parse_ir); null for a DSL graph.
  std::unique_ptr<ir::Graph> parsed;
  /// The first failed DSL call's error, located at the Python line that made it (the DSL
  /// Graph's own copy names the binding's C++ line). compile and evaluate report it.
  std::optional<Error> firstError;

  const ir::Graph &ir() const { return dsl ? dsl->ir() : *parsed; }
  /// The DSL builder; a kiln.Error for a parsed graph, which the DSL cannot extend.
  Graph &builder();
  /// What every consumer checks first: the first DSL error, then the graph's own checks.
  Expected<void> finalize() const;
  /// Throws the error of the DSL call that just failed (`errorsBefore` errors were recorded
  /// before it), located at the Python caller's line, and keeps it as firstError.
  [[noreturn]] void throwDslError(size_t errorsBefore);
};

using GraphHandle = std::shared_ptr<PyGraph>;

struct PyTensor {
  GraphHandle graph;
  Tensor tensor;
};

/// Runs `call(Graph &)`, a DSL call returning a Tensor: a failure throws kiln.Error at the
/// user's Python line instead of leaving a poisoned Tensor behind.
template <typename Call> PyTensor buildOn(const GraphHandle &graph, Call &&call) {
  Graph &builder = graph->builder();
  size_t errorsBefore = builder.errorCount();
  Tensor result = call(builder);
  if (builder.errorCount() != errorsBefore || !result.ok())
    graph->throwDslError(errorsBefore);
  return PyTensor{graph, result};
}

void bindGraph(pybind11::module_ &module);

} // namespace kiln::python
