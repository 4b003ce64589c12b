// From bytes to a ModelProto kiln can convert: parsed, external data inlined, checked by
// onnx's checker, input shapes fixed from ImportOptions, converted to kTargetOpset, and with
// onnx's shape inference run (its shapes cross-check every converter's result).
#pragma once

#include "frontend/onnx/Import.h"

#include <onnx/onnx_pb.h>

#include <set>
#include <string>

namespace kiln::onnx {

/// The model, ready for conversion, or the first problem with it as one Error naming
/// `displayName`.
Expected<::onnx::ModelProto> loadModelProto(std::string_view bytes, const ImportOptions &options,
                                            const std::string &externalDataDir,
                                            const std::string &displayName);

/// The names of the graph's initializers (older models also list them as inputs).
std::set<std::string, std::less<>> initializerNames(const ::onnx::GraphProto &graph);

} // namespace kiln::onnx
