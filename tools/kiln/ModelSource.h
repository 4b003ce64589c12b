// Where `kiln` gets a model: a graph IR file (.kir) or a built-in example
// ("example:cnn"), with parameter values (the example's initializers, a
// safetensors file, or seeded random values).
#pragma once

#include "frontend/Graph.h"
#include "ir/graph/Graph.h"
#include "support/HostTensor.h"

#include <memory>
#include <string>

namespace kiln::tool {

struct LoadedModel {
  std::unique_ptr<Graph> dsl;       ///< set for examples
  std::unique_ptr<ir::Graph> owned; ///< set for .kir files
  const ir::Graph *graph = nullptr;
  NamedTensors params; ///< a value for every parameter
};

/// Loads `spec`. `batch` <= 0 keeps the example's default batch; `seed` drives
/// the example initializers and the random parameters of .kir files.
Expected<LoadedModel> loadModel(const std::string &spec, int64_t batch, uint64_t seed);

/// Seeded random values for every graph input: normal floats, integers in
/// [0, 10) (valid indices for any gather over 10 or more rows), random bools.
NamedTensors randomInputs(const ir::Graph &graph, uint64_t seed);

/// The list printed by --help: "example:<name>  <description>" lines.
std::string exampleListing();

} // namespace kiln::tool
