// Reading --inputs and --shape, writing --output.
#include "tools/kiln/TensorFiles.h"

#include "frontend/io/Npy.h"
#include "frontend/io/Safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <optional>

namespace kiln::tool {

const char *const kShapeHelp =
    "  --shape NAME=D0,D1,.. the shape of an ONNX model's input whose dims are not\n"
    "                        fixed (a dynamic batch); repeat for several inputs.\n"
    "                        Without it a named dim (dim_param) stays a size symbol\n"
    "                        in [1, 64]: --shape DIM=LO..HI gives it another range\n"
    "                        (docs/dynamic-shapes.md)\n";

std::optional<ir::SizeInterval> parseSizeRange(std::string_view text) {
  size_t dots = text.find("..");
  if (dots == std::string_view::npos)
    return std::nullopt;
  auto number = [](std::string_view part) -> std::optional<int64_t> {
    int64_t value = 0;
    auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    return error == std::errc() && end == part.data() + part.size() ? std::optional(value)
                                                                    : std::nullopt;
  };
  std::optional<int64_t> low = number(text.substr(0, dots));
  std::optional<int64_t> high = number(text.substr(dots + 2));
  if (!low || !high || *low < 0 || *low > *high)
    return std::nullopt;
  return ir::SizeInterval{*low, *high};
}

Expected<InputShapes> parseShapeFlags(const Args &args) {
  InputShapes shapes;
  for (const std::string &text : args.values("--shape")) {
    size_t eq = text.find('=');
    auto bad = [&](std::string why) {
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("--shape '{}': {} (expected NAME=D0,D1,...)", text, why));
    };
    if (eq == std::string::npos || eq == 0)
      return bad("no input name");
    std::string_view dims = std::string_view(text).substr(eq + 1);
    if (dims.find("..") != std::string_view::npos) {
      std::optional<ir::SizeInterval> range = parseSizeRange(dims);
      if (!range)
        return makeError(ErrorCode::InvalidArgument,
                         fmt::format("--shape '{}': expected DIM=LO..HI with 0 <= LO <= HI", text));
      if (!shapes.dimRanges.emplace(text.substr(0, eq), *range).second)
        return bad("the dim's range is given twice");
      continue;
    }
    Shape shape;
    while (!dims.empty()) {
      size_t comma = dims.find(',');
      std::string_view part = dims.substr(0, comma);
      int64_t dim = 0;
      auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), dim);
      if (error != std::errc() || end != part.data() + part.size() || dim <= 0)
        return bad(fmt::format("'{}' is not a positive dimension", part));
      shape.push_back(dim);
      dims = comma == std::string_view::npos ? std::string_view() : dims.substr(comma + 1);
    }
    if (shape.empty())
      return bad("no dims");
    if (!shapes.byInput.emplace(text.substr(0, eq), shape).second)
      return bad("the input's shape is given twice");
  }
  return shapes;
}

Expected<NamedTensors> loadInputTensors(const std::string &spec, const ir::Graph &graph) {
  if (!spec.ends_with(".npy"))
    return io::loadSafetensors(spec);
  NamedTensors tensors;
  if (spec.find('=') == std::string::npos) {
    if (graph.inputs().size() != 1)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("--inputs {}: the model has {} inputs; name each "
                                   "(--inputs a=x.npy,b=y.npy)",
                                   spec, graph.inputs().size()));
    KILN_TRY(HostTensor tensor, io::loadNpy(spec));
    tensors.emplace(graph.inputs()[0]->name(), std::move(tensor));
    return tensors;
  }
  std::string_view rest = spec;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("--inputs: '{}' is not NAME=FILE.npy", item));
    KILN_TRY(HostTensor tensor, io::loadNpy(std::string(item.substr(eq + 1))));
    tensors.insert_or_assign(std::string(item.substr(0, eq)), std::move(tensor));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return tensors;
}

namespace {

/// The file inside --output DIR/ that holds output `name`: the name with each
/// '/' as '_' (ONNX names such as "/layer1/Relu_output_0" have them), so no
/// output is written outside DIR; "." and ".." and "" get a leading '_'.
std::string npyFileName(const std::string &name) {
  std::string file = name;
  std::replace(file.begin(), file.end(), '/', '_');
  if (file.empty() || file == "." || file == "..")
    file = "_" + file;
  return file + ".npy";
}

} // namespace

Expected<void> saveOutputTensors(const std::string &path, const NamedTensors &outputs) {
  std::error_code ec;
  if (!path.ends_with("/") && !std::filesystem::is_directory(path, ec))
    return io::saveSafetensors(path, io::TensorMap(outputs.begin(), outputs.end()));
  std::filesystem::create_directories(path, ec);
  if (ec)
    return makeError(ErrorCode::IOError, fmt::format("cannot create output directory '{}': {}",
                                                     path, ec.message()));
  std::map<std::string, std::string> writtenBy; // file name -> output name
  for (const auto &[name, tensor] : outputs) {
    std::string file = npyFileName(name);
    if (auto [previous, fresh] = writtenBy.emplace(file, name); !fresh)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("--output {}: outputs '{}' and '{}' would both be written to "
                                   "'{}'; give an output file (safetensors) instead",
                                   path, previous->second, name, file));
    KILN_TRY_VOID(io::saveNpy((std::filesystem::path(path) / file).string(), tensor));
  }
  return {};
}

} // namespace kiln::tool
