// Reading ONNX tensors: every dtype of ImportOptions' contract, raw or typed.
#include "frontend/onnx/TensorProtoReading.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <limits>

namespace kiln::onnx {

std::optional<DType> dtypeFromOnnx(int32_t onnxType) {
  switch (onnxType) {
  case ::onnx::TensorProto_DataType_FLOAT: return DType::F32;
  case ::onnx::TensorProto_DataType_DOUBLE: return DType::F64;
  case ::onnx::TensorProto_DataType_FLOAT16: return DType::F16;
  case ::onnx::TensorProto_DataType_BFLOAT16: return DType::BF16;
  case ::onnx::TensorProto_DataType_INT64: return DType::I64;
  case ::onnx::TensorProto_DataType_INT32: return DType::I32;
  case ::onnx::TensorProto_DataType_INT8: return DType::I8;
  case ::onnx::TensorProto_DataType_BOOL: return DType::Bool;
  default: return std::nullopt;
  }
}

std::string_view onnxTypeName(int32_t onnxType) {
  if (::onnx::TensorProto_DataType_IsValid(onnxType))
    return ::onnx::TensorProto_DataType_Name(static_cast<::onnx::TensorProto_DataType>(onnxType));
  return "<invalid>";
}

namespace {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian, as HostTensor's bytes are on this host");

Error countError(std::string_view what, std::string_view field, size_t have, int64_t want) {
  return Error(ErrorCode::FormatError,
               fmt::format("tensor '{}': {} holds {} values, its dims need {}", what, field, have,
                           want));
}

// Copies typed-field values into `tensor`, narrowing each with `store`.
template <typename Field, typename Store>
Expected<void> fillFrom(const Field &field, std::string_view fieldName, HostTensor &tensor,
                        std::string_view what, Store store) {
  if (static_cast<int64_t>(field.size()) != tensor.numElements())
    return std::unexpected(countError(what, fieldName, field.size(), tensor.numElements()));
  for (int i = 0; i < field.size(); ++i)
    KILN_TRY_VOID(store(i, field.Get(i)));
  return {};
}

} // namespace

Expected<HostTensor> tensorFromProto(const ::onnx::TensorProto &proto, std::string_view what) {
  std::optional<DType> dtype = dtypeFromOnnx(proto.data_type());
  if (!dtype)
    return makeError(ErrorCode::Unsupported,
                     fmt::format("tensor '{}' has element type {}, which kiln does not support",
                                 what, onnxTypeName(proto.data_type())));
  if (proto.data_location() == ::onnx::TensorProto_DataLocation_EXTERNAL)
    return makeError(ErrorCode::FormatError,
                     fmt::format("tensor '{}' is stored outside the model", what));
  if (proto.has_segment())
    return makeError(ErrorCode::Unsupported,
                     fmt::format("tensor '{}' is segmented, which kiln does not support", what));
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  auto created = HostTensor::create(*dtype, shape);
  if (!created)
    return makeError(created.error().code(),
                     fmt::format("tensor '{}': {}", what, created.error().message()));
  HostTensor tensor = std::move(*created);

  if (proto.has_raw_data()) {
    const std::string &raw = proto.raw_data();
    if (raw.size() != tensor.byteSize())
      return makeError(ErrorCode::FormatError,
                       fmt::format("tensor '{}' ({}): raw_data has {} bytes, its dims need {}",
                                   what, tensor.typeStr(), raw.size(), tensor.byteSize()));
    if (!raw.empty())
      std::memcpy(tensor.bytes().data(), raw.data(), raw.size());
    if (*dtype == DType::Bool)
      for (uint8_t &byte : tensor.bytes())
        byte = byte != 0;
    return tensor;
  }

  auto setDouble = [&](int i, double value) -> Expected<void> {
    tensor.setDouble(i, value);
    return {};
  };
  // int32_data carries the narrow types: integers by value, f16/bf16 as their bit patterns.
  auto setNarrow = [&](int i, int32_t value) -> Expected<void> {
    switch (*dtype) {
    case DType::F16:
    case DType::BF16: {
      if (value < 0 || value > 0xffff)
        return makeError(ErrorCode::FormatError,
                         fmt::format("tensor '{}': int32_data[{}] = {} is not a 16-bit pattern",
                                     what, i, value));
      uint16_t bits = static_cast<uint16_t>(value);
      std::memcpy(tensor.bytes().data() + 2 * i, &bits, 2);
      return {};
    }
    case DType::I8:
      if (value < -128 || value > 127)
        return makeError(ErrorCode::FormatError,
                         fmt::format("tensor '{}': int32_data[{}] = {} is out of int8's range",
                                     what, i, value));
      break;
    case DType::Bool:
      value = value != 0;
      break;
    default: break;
    }
    tensor.setDouble(i, value);
    return {};
  };
  auto setInt64 = [&](int i, int64_t value) -> Expected<void> {
    tensor.as<int64_t>()[i] = value;
    return {};
  };

  switch (*dtype) {
  case DType::F32:
    KILN_TRY_VOID(fillFrom(proto.float_data(), "float_data", tensor, what, setDouble));
    break;
  case DType::F64:
    KILN_TRY_VOID(fillFrom(proto.double_data(), "double_data", tensor, what, setDouble));
    break;
  case DType::I64:
    KILN_TRY_VOID(fillFrom(proto.int64_data(), "int64_data", tensor, what, setInt64));
    break;
  case DType::I32:
  case DType::I8:
  case DType::Bool:
  case DType::F16:
  case DType::BF16:
    KILN_TRY_VOID(fillFrom(proto.int32_data(), "int32_data", tensor, what, setNarrow));
    break;
  default:
    return makeError(ErrorCode::Unsupported,
                     fmt::format("tensor '{}': element type {} is not read", what,
                                 tensor.typeStr()));
  }
  return tensor;
}

} // namespace kiln::onnx
