// Where `kiln` gets a model: a graph IR file (.kir), an ONNX model (.onnx) or a
// built-in example ("example:cnn"), with parameter values (the example's
// initializers, the ONNX initializers, a safetensors file, or seeded random values).
#pragma once

#include "frontend/Graph.h"
#include "ir/graph/Graph.h"
#include "support/HostTensor.h"
#include "tools/kiln/TensorFiles.h"

#include <memory>
#include <string>

namespace kiln::tool {

struct LoadedModel {
  std::unique_ptr<Graph> dsl;       ///< set for examples and ONNX models
  std::unique_ptr<ir::Graph> owned; ///< set for .kir files
  const ir::Graph *graph = nullptr;
  NamedTensors params; ///< a value for every parameter
};

/// Loads `spec`. `batch` <= 0 keeps the example's default batch; `seed` drives
/// the example initializers and the random parameters of .kir files; `shapes`
/// fixes the unfixed input dims of an ONNX model (--shape).
Expected<LoadedModel> loadModel(const std::string &spec, int64_t batch, uint64_t seed,
                                const InputShapes &shapes = {});

/// Seeded random values for every graph input: normal floats, integers in
/// [0, 10) (valid indices for any gather over 10 or more rows), random bools.
/// An error, not an abort, when an input's shape does not fit in memory.
Expected<NamedTensors> randomInputs(const ir::Graph &graph, uint64_t seed);

/// The list printed by --help: "example:<name>  <description>" lines.
std::string exampleListing();

} // namespace kiln::tool
