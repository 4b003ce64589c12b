// The tensor files `kiln` reads and writes: --inputs and --params (safetensors, or .npy per
// input), --output (a safetensors file, or a directory of .npy files), and --shape for the
// unfixed input dims of ONNX models.
#pragma once

#include "frontend/Graph.h"
#include "tools/kiln/Args.h"

#include <map>
#include <optional>
#include <string>

namespace kiln::tool {

/// What --shape says of an ONNX model's open dims: an input's whole shape, or a dim_param's
/// range (it stays a size symbol).
struct InputShapes {
  std::map<std::string, Shape, std::less<>> byInput;
  std::map<std::string, ir::SizeInterval, std::less<>> dimRanges;
  /// The range of the dim_params dimRanges does not name (unset: the importer's default).
  std::optional<ir::SizeInterval> defaultDimRange;
  bool empty() const { return byInput.empty() && dimRanges.empty(); }
};

/// "--shape NAME=D0,D1,..." (an input's shape) and "--shape DIM=LO..HI" (a dim_param's range),
/// repeatable.
Expected<InputShapes> parseShapeFlags(const Args &args);
/// "LO..HI" with 0 <= LO <= HI, else nullopt.
std::optional<ir::SizeInterval> parseSizeRange(std::string_view text);
/// The help line of --shape.
extern const char *const kShapeHelp;

/// --inputs: "x.npy" (a graph with one input), "a=x.npy,b=y.npy", or a safetensors file.
Expected<NamedTensors> loadInputTensors(const std::string &spec, const ir::Graph &graph);
/// --output: "DIR/" (or an existing directory) gets one NAME.npy per output ('/' in NAME
/// becomes '_', so nothing is written outside DIR; two names that become one file are an
/// error); any other path is written as one safetensors file (names must be UTF-8).
Expected<void> saveOutputTensors(const std::string &path, const NamedTensors &outputs);

} // namespace kiln::tool
