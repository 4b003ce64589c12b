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

/// Whether `spec` with these flags names something loadModel can load, before
/// anything is read: an unknown example, --batch other than for an example
/// (or a .kir file), --shape other than for an ONNX model are InvalidArgument
/// errors, which the commands report as usage errors (exit 2).
Expected<void> checkModelSpec(const std::string &spec, int64_t batch, const InputShapes &shapes);

/// Loads `spec` (checkModelSpec first). `batch` <= 0 keeps the example's default batch; `seed` drives
/// the example initializers and the random parameters of .kir files; `shapes`
/// fixes the unfixed input dims of an ONNX model (--shape).
Expected<LoadedModel> loadModel(const std::string &spec, int64_t batch, uint64_t seed,
                                const InputShapes &shapes = {});

/// Example `spec` ("example:NAME") built with a symbolic batch, N in [least, largest]: one
/// compile or bundle for every batch in the range.
Expected<LoadedModel> loadSymbolicExample(const std::string &spec, int64_t least, int64_t largest,
                                          uint64_t seed);

/// A compile error of `model` with a note on what to do when the model's size symbols are
/// the cause (an ONNX model's dim_params on a GPU target: pin them with --shape).
Error withSymbolicModelNote(Error error, const ir::Graph &model, const std::string &spec);

/// --params FILE: a safetensors file holding exactly the graph's parameters
/// (one error lists every missing, unknown or mistyped tensor).
Expected<NamedTensors> loadParamsFile(const std::string &path, const ir::Graph &graph);

/// Seeded random values for every graph input: normal floats, integers in
/// [0, 10) (valid indices for any gather over 10 or more rows), random bools.
/// An error, not an abort, when an input's shape does not fit in memory.
Expected<NamedTensors> randomInputs(const ir::Graph &graph, uint64_t seed);

/// The list printed by --help: "example:<name>  <description>" lines.
std::string exampleListing();

} // namespace kiln::tool
