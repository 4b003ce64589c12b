// The example models by name, so tools (kiln run/compile) and benchmarks can
// build any of them at a chosen batch size.
#pragma once

#include "frontend/Graph.h"

#include <functional>
#include <string>
#include <vector>

namespace kiln::examples {

struct ExampleModel {
  std::string name;        ///< e.g. "cnn"
  std::string description; ///< one line
  int64_t defaultBatch = 1;
  /// Builds the model into `graph` (inputs, parameters, outputs) at `batch`: a size, or a size
  /// symbol, kiln::dim("N", 1, 64), for one compile of every batch (every example takes one).
  std::function<void(Graph &graph, Dim batch)> build;
};

/// Every example, in a stable order.
const std::vector<ExampleModel> &exampleModels();
/// The example called `name`, or nullptr.
const ExampleModel *findExampleModel(std::string_view name);

} // namespace kiln::examples
