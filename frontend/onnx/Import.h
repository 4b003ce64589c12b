// kiln::onnx: imports an ONNX model (a .onnx file or its bytes) into a kiln::Graph, the same
// graph the DSL builds, so everything downstream (passes, compile, run, AOT) takes it as is.
// docs/onnx.md says what is supported and how names, initializers and dynamic dims map.
#pragma once

#include "frontend/Graph.h"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::onnx {

/// Every model is converted to this opset before import, so kiln has one converter per ONNX
/// op rather than one per op and opset.
inline constexpr int64_t kTargetOpset = 17;
/// The oldest default-domain opset accepted (onnx's version converter takes it to
/// kTargetOpset; the tests exercise the conversion from opsets 13 and 14).
inline constexpr int64_t kMinOpset = 7;

struct ImportOptions {
  /// Shapes of graph inputs whose dims are not fixed in the model (a dynamic batch, a
  /// `dim_param`), by ONNX input name: the model is then static there. A given shape must
  /// agree with the model's fixed dims.
  std::map<std::string, Shape, std::less<>> inputShapes;
  /// A `dim_param` no given shape fixes becomes a size symbol (docs/dynamic-shapes.md): one
  /// compile serves every size in its range. The range by dim_param name, else
  /// defaultDimRange. A dim with neither a value nor a name must be fixed by inputShapes.
  std::map<std::string, ir::SizeInterval, std::less<>> dimRanges;
  ir::SizeInterval defaultDimRange{1, 64};
  /// Floating-point initializers become trainable parameters (by default they are frozen:
  /// an imported model is for inference, and frozen weights may be folded by passes).
  bool trainableParams = false;
  /// The kiln graph's name; empty keeps the ONNX graph's name (or "main").
  std::string graphName;
};

/// Imports the model at `path`. External data files are read from the model's directory.
/// Any failure is one Error: a file that is not ONNX, a failed check, an opset outside
/// [kMinOpset, kTargetOpset] that cannot be converted, missing input shapes (listing every
/// unfixed dim), or unsupported nodes (listing every one, with its op type, domain, name and
/// the attribute values kiln does not handle).
Expected<std::unique_ptr<Graph>> importModel(const std::string &path,
                                             const ImportOptions &options = {});

/// Imports a serialized ModelProto. `externalDataDir` is where tensors stored outside the
/// model are looked up (empty: such tensors are an error); `displayName` names the model in
/// errors.
Expected<std::unique_ptr<Graph>> importModelFromBytes(std::string_view bytes,
                                                      const ImportOptions &options = {},
                                                      const std::string &externalDataDir = "",
                                                      const std::string &displayName = "<memory>");

/// One row of the converter registry, as docs/onnx.md lists it.
struct SupportedOp {
  std::string opType;
  std::string domain; ///< "" is the default ONNX domain.
  std::string note;   ///< What the converter does not handle, if anything.
};
/// The ONNX ops kiln converts, sorted by domain and op type.
std::vector<SupportedOp> supportedOps();

/// The kiln identifier an ONNX name becomes (inputs, initializers, outputs): characters
/// outside [A-Za-z0-9_.] become '_', and a name that does not start with a letter or '_'
/// gets a leading '_' ("onnx::Conv_12" -> "onnx__Conv_12", "input.1" stays).
std::string kilnName(std::string_view onnxName);

} // namespace kiln::onnx
