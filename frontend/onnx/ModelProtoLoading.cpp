// Parsing, checking and normalizing an ONNX model before conversion.
#include "frontend/onnx/ModelProtoLoading.h"

#include "support/MemorySize.h"
#include "support/RegularFile.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <climits>
#include <filesystem>
#include <new>

namespace kiln::onnx {

namespace {

Error modelError(ErrorCode code, const std::string &displayName, std::string message) {
  return Error(code, fmt::format("ONNX model '{}': {}", displayName, message));
}

// The onnx library reports problems by throwing; its messages end in context blocks.
std::string exceptionText(const std::exception &e) {
  std::string text = e.what();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

// Reads `length` bytes (all when negative) at `offset` of a file beside the model. Only
// regular files under the model's directory: a location that climbs out of it, or names a
// device or a FIFO, is rejected rather than read.
Expected<std::string> readExternalData(const std::string &dir, const std::string &location,
                                       int64_t offset, int64_t length, std::string_view tensor) {
  namespace fs = std::filesystem;
  fs::path relative(location);
  if (location.empty() || relative.is_absolute())
    return makeError(ErrorCode::FormatError,
                     fmt::format("tensor '{}': external data location '{}' must be a path "
                                 "relative to the model's directory",
                                 tensor, location));
  for (const fs::path &part : relative)
    if (part == "..")
      return makeError(ErrorCode::FormatError,
                       fmt::format("tensor '{}': external data location '{}' leaves the "
                                   "model's directory",
                                   tensor, location));
  if (dir.empty())
    return makeError(ErrorCode::FormatError,
                     fmt::format("tensor '{}' is stored in external file '{}', but the model "
                                 "was given as bytes without a directory",
                                 tensor, location));
  std::string path = (fs::path(dir) / relative).string();
  std::string what = fmt::format("external data of tensor '{}'", tensor);
  KILN_TRY(RegularFile file, openRegularFile(path, what));
  auto size = static_cast<int64_t>(file.size);
  if (offset < 0 || offset > size || (length >= 0 && length > size - offset))
    return makeError(ErrorCode::FormatError,
                     fmt::format("tensor '{}': bytes [{}, +{}) lie outside external data file "
                                 "'{}' of {} bytes",
                                 tensor, offset, length, path, size));
  int64_t count = length >= 0 ? length : size - offset;
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(count));
  } catch (const std::bad_alloc &) {
    return makeError(ErrorCode::OutOfMemory,
                     fmt::format("tensor '{}': out of memory for its {} of external data",
                                 tensor, byteSizeText(static_cast<uint64_t>(count))));
  }
  KILN_TRY_VOID(readExactly(file, bytes.data(), static_cast<uint64_t>(count),
                            static_cast<uint64_t>(offset), what, path));
  return bytes;
}

Expected<void> inlineExternalData(::onnx::TensorProto &tensor, const std::string &dir) {
  if (tensor.data_location() != ::onnx::TensorProto_DataLocation_EXTERNAL)
    return {};
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    try {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoll(entry.value());
      else if (entry.key() == "length")
        length = std::stoll(entry.value());
    } catch (const std::exception &) {
      return makeError(ErrorCode::FormatError,
                       fmt::format("tensor '{}': external data {} '{}' is not a number",
                                   tensor.name(), entry.key(), entry.value()));
    }
  }
  KILN_TRY(std::string bytes, readExternalData(dir, location, offset, length, tensor.name()));
  tensor.set_raw_data(std::move(bytes));
  tensor.clear_external_data();
  tensor.set_data_location(::onnx::TensorProto_DataLocation_DEFAULT);
  return {};
}

// Every tensor the import reads: initializers and Constant nodes' `value` attributes.
Expected<void> inlineAllExternalData(::onnx::GraphProto &graph, const std::string &dir) {
  for (auto &initializer : *graph.mutable_initializer())
    KILN_TRY_VOID(inlineExternalData(initializer, dir));
  for (auto &node : *graph.mutable_node())
    for (auto &attribute : *node.mutable_attribute())
      if (attribute.has_t())
        KILN_TRY_VOID(inlineExternalData(*attribute.mutable_t(), dir));
  return {};
}

std::string dimText(const ::onnx::TensorShapeProto_Dimension &dim) {
  if (dim.has_dim_value())
    return std::to_string(dim.dim_value());
  if (dim.has_dim_param() && !dim.dim_param().empty())
    return fmt::format("'{}'", dim.dim_param());
  return "?";
}

// Writes ImportOptions::inputShapes into the graph's inputs, and fails listing every input
// dim that is still not fixed.
Expected<void> fixInputShapes(::onnx::GraphProto &graph, const ImportOptions &options,
                              const std::string &displayName) {
  auto initializers = initializerNames(graph);
  std::set<std::string, std::less<>> inputNames;
  std::vector<std::string> unfixed;
  std::vector<std::string> conflicts;
  for (auto &input : *graph.mutable_input()) {
    if (initializers.contains(input.name()))
      continue;
    inputNames.insert(input.name());
    if (!input.type().has_tensor_type())
      return std::unexpected(modelError(ErrorCode::Unsupported, displayName,
                                        fmt::format("input '{}' is not a tensor", input.name())));
    auto *tensorType = input.mutable_type()->mutable_tensor_type();
    auto given = options.inputShapes.find(input.name());
    if (given != options.inputShapes.end()) {
      const Shape &shape = given->second;
      auto *shapeProto = tensorType->mutable_shape();
      if (tensorType->has_shape() && shapeProto->dim_size() != static_cast<int>(shape.size())) {
        conflicts.push_back(fmt::format("input '{}' has rank {}, the given shape [{}] rank {}",
                                        input.name(), shapeProto->dim_size(),
                                        fmt::join(shape, ","), shape.size()));
        continue;
      }
      if (!tensorType->has_shape() || shapeProto->dim_size() == 0) {
        shapeProto->clear_dim();
        for (size_t i = 0; i < shape.size(); ++i)
          shapeProto->add_dim();
      }
      for (size_t i = 0; i < shape.size(); ++i) {
        auto *dim = shapeProto->mutable_dim(static_cast<int>(i));
        if (shape[i] <= 0) {
          conflicts.push_back(fmt::format("input '{}': dim {} is given as {}", input.name(), i,
                                          shape[i]));
        } else if (dim->has_dim_value() && dim->dim_value() != shape[i]) {
          conflicts.push_back(fmt::format("input '{}': dim {} is {} in the model, given as {}",
                                          input.name(), i, dim->dim_value(), shape[i]));
        } else {
          dim->set_dim_value(shape[i]);
        }
      }
      continue;
    }
    if (!tensorType->has_shape()) {
      unfixed.push_back(fmt::format("input '{}': no shape in the model", input.name()));
      continue;
    }
    // A named dim (dim_param) becomes a size symbol; a dim with no value and no name cannot.
    std::vector<std::string> dims;
    bool fixed = true;
    for (const auto &dim : tensorType->shape().dim()) {
      dims.push_back(dimText(dim));
      bool named = !dim.has_dim_value() && dim.has_dim_param() && !dim.dim_param().empty();
      fixed = fixed && (named || (dim.has_dim_value() && dim.dim_value() > 0));
    }
    if (!fixed)
      unfixed.push_back(fmt::format("input '{}' [{}]", input.name(), fmt::join(dims, ",")));
  }
  for (const auto &[name, shape] : options.inputShapes)
    if (!inputNames.contains(name))
      conflicts.push_back(fmt::format("a shape is given for '{}', which is not an input "
                                      "(inputs: {})",
                                      name, fmt::join(inputNames, ", ")));
  if (!conflicts.empty()) {
    Error error = modelError(ErrorCode::ShapeMismatch, displayName,
                             "the given input shapes do not fit the model");
    for (auto &conflict : conflicts)
      error.withNote(std::move(conflict));
    return std::unexpected(std::move(error));
  }
  if (!unfixed.empty()) {
    Error error = modelError(ErrorCode::InvalidArgument, displayName,
                             "some input dims have neither a size nor a name; give each such "
                             "input's shape (ImportOptions::inputShapes, or --shape "
                             "NAME=D0,D1,...)");
    for (auto &line : unfixed)
      error.withNote(std::move(line));
    return std::unexpected(std::move(error));
  }
  return {};
}

Expected<int64_t> defaultOpset(const ::onnx::ModelProto &model, const std::string &displayName) {
  for (const auto &opset : model.opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx")
      return opset.version();
  return std::unexpected(modelError(ErrorCode::FormatError, displayName,
                                    "it imports no version of the default ONNX opset"));
}

} // namespace

std::set<std::string, std::less<>> initializerNames(const ::onnx::GraphProto &graph) {
  std::set<std::string, std::less<>> names;
  for (const auto &initializer : graph.initializer())
    names.insert(initializer.name());
  return names;
}

Expected<::onnx::ModelProto> loadModelProto(std::string_view bytes, const ImportOptions &options,
                                            const std::string &externalDataDir,
                                            const std::string &displayName) {
  ::onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    return std::unexpected(modelError(ErrorCode::Unsupported, displayName,
                                      fmt::format("{} bytes is over protobuf's 2 GiB limit; "
                                                  "save the weights as external data",
                                                  bytes.size())));
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return std::unexpected(modelError(ErrorCode::FormatError, displayName,
                                      "not an ONNX model (the bytes do not parse as a "
                                      "ModelProto; truncated or another format?)"));
  if (!model.has_graph())
    return std::unexpected(modelError(ErrorCode::FormatError, displayName, "it has no graph"));
  KILN_TRY(int64_t opset, defaultOpset(model, displayName));
  if (opset < kMinOpset || opset > kTargetOpset)
    return std::unexpected(modelError(
        ErrorCode::Unsupported, displayName,
        fmt::format("it uses ONNX opset {}; kiln imports opsets {} to {} (it converts each "
                    "model to opset {})",
                    opset, kMinOpset, kTargetOpset, kTargetOpset)));
  if (auto inlined = inlineAllExternalData(*model.mutable_graph(), externalDataDir); !inlined)
    return std::unexpected(modelError(inlined.error().code(), displayName,
                                      inlined.error().message()));
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    return std::unexpected(modelError(ErrorCode::FormatError, displayName,
                                      "onnx's checker rejects it: " + exceptionText(e)));
  }
  KILN_TRY_VOID(fixInputShapes(*model.mutable_graph(), options, displayName));
  if (opset != kTargetOpset) {
    try {
      model = ::onnx::version_conversion::ConvertVersion(model, static_cast<int>(kTargetOpset));
    } catch (const std::exception &e) {
      return std::unexpected(modelError(
          ErrorCode::Unsupported, displayName,
          fmt::format("cannot convert it from opset {} to opset {} (kiln imports opsets {} to "
                      "{}): {}",
                      opset, kTargetOpset, kMinOpset, kTargetOpset, exceptionText(e))));
    }
  }
  try {
    ::onnx::ShapeInferenceOptions inference(/*check_type=*/true, /*error_mode=*/1,
                                            /*enable_data_propagation=*/true);
    ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(), inference);
  } catch (const std::exception &e) {
    return std::unexpected(modelError(ErrorCode::FormatError, displayName,
                                      "onnx's shape inference fails: " + exceptionText(e)));
  }
  return model;
}

} // namespace kiln::onnx
