// ONNX TensorProto -> HostTensor: the element types kiln has, data in raw_data or in the
// typed fields. External data is inlined before this runs (ModelProtoLoading.cpp).
#pragma once

#include "support/HostTensor.h"

#include <onnx/onnx_pb.h>

#include <optional>
#include <string_view>

namespace kiln::onnx {

/// kiln's dtype for an ONNX TensorProto_DataType value, or nullopt (uint8, strings, ...).
std::optional<DType> dtypeFromOnnx(int32_t onnxType);
/// "FLOAT16", "UINT8", ...: the ONNX name of an element type, for errors.
std::string_view onnxTypeName(int32_t onnxType);

/// The tensor's value. FormatError when its byte or value count disagrees with its dims,
/// Unsupported for an element type kiln lacks; `what` names the tensor in the message.
Expected<HostTensor> tensorFromProto(const ::onnx::TensorProto &proto, std::string_view what);

} // namespace kiln::onnx
