#include "runtime/cuda/CudaTensorMap.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>

namespace kiln::runtime::cuda {
namespace {

/// The element type the copy engine moves: 8-bit floats travel as bytes.
std::optional<CUtensorMapDataType> tensorMapType(DType dtype) {
  switch (dtype) {
  case DType::F64: return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
  case DType::F32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  case DType::F16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case DType::BF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::I8:
  case DType::Bool: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  case DType::I32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case DType::I64: return CU_TENSOR_MAP_DATA_TYPE_INT64;
  }
  return std::nullopt;
}

/// "the tensor map of parameter 3 (dims [520, 300], box [64, 128])"
std::string mapName(const TensorMapArg &map) {
  return fmt::format("the tensor map of parameter {} (dims [{}], box [{}])", map.param,
                     fmt::join(map.dims, ", "), fmt::join(map.box, ", "));
}

} // namespace

Expected<void> checkTensorMap(const TensorMapArg &map, DevicePtr base, std::string_view kernel) {
  const std::string what = mapName(map);
  auto broken = [&](std::string rule) {
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("kernel '{}': {} {}", kernel, what, rule));
  };
  const size_t rank = map.dims.size();
  if (!tensorMapType(map.dtype) || rank < 1 || rank > 5 || map.box.size() != rank ||
      map.strides.size() + 1 != rank)
    return broken("is malformed (a rank of 1 to 5 with a box entry per dim and a stride per "
                  "dim but the first)");
  if (base % 16 != 0)
    return broken(fmt::format("starts at {:#x}, not at a 16-byte boundary", base));
  const int64_t bytes = dtypeByteSize(map.dtype);
  constexpr int64_t kMaxDim = int64_t{1} << 32, kMaxStrideBytes = int64_t{1} << 40;
  for (size_t d = 0; d < rank; ++d) {
    if (map.dims[d] < 1 || map.dims[d] > kMaxDim)
      return broken(fmt::format("has dim {} of {} elements (1 to 2^32)", d, map.dims[d]));
    if (map.box[d] < 1 || map.box[d] > 256)
      return broken(fmt::format("has a box of {} along dim {} (1 to 256)", map.box[d], d));
  }
  for (size_t d = 1; d < rank; ++d) {
    const int64_t strideBytes = map.strides[d - 1] * bytes;
    if (map.strides[d - 1] < 1 || strideBytes % 16 != 0 || strideBytes >= kMaxStrideBytes)
      return broken(fmt::format("steps dim {} by {} bytes (a positive multiple of 16 below "
                                "2^40)",
                                d, strideBytes));
  }
  const int64_t innerBytes = map.box[0] * bytes;
  if (innerBytes % 16 != 0)
    return broken(fmt::format("has an inner box of {} bytes (a multiple of 16)", innerBytes));
  if (map.swizzle128 && innerBytes > 128)
    return broken(fmt::format("has an inner box of {} bytes, past the 128-byte swizzle's span",
                              innerBytes));
  return {};
}

Expected<void> encodeTensorMap(const CudaDriver &driver, const TensorMapArg &map, DevicePtr base,
                               std::string_view kernel, CUtensorMap &out) {
  KILN_TRY_VOID(checkTensorMap(map, base, kernel));
  const std::string what = mapName(map);
  const CUtensorMapDataType type = *tensorMapType(map.dtype);
  const size_t rank = map.dims.size();
  const int64_t bytes = dtypeByteSize(map.dtype);
  std::array<cuuint64_t, 5> dims{}, strides{};
  std::array<cuuint32_t, 5> box{}, elementStrides{};
  for (size_t d = 0; d < rank; ++d) {
    dims[d] = static_cast<cuuint64_t>(map.dims[d]);
    box[d] = static_cast<cuuint32_t>(map.box[d]);
    elementStrides[d] = 1;
    if (d > 0)
      strides[d - 1] = static_cast<cuuint64_t>(map.strides[d - 1] * bytes); // in bytes
  }
  // Out-of-bounds elements read as zeros (OOB fill NONE), which the GEMM edges rely on.
  return driver.check(driver.api.tensorMapEncodeTiled(
                          &out, type, static_cast<cuuint32_t>(rank),
                          reinterpret_cast<void *>(static_cast<uintptr_t>(base)), dims.data(),
                          strides.data(), box.data(), elementStrides.data(),
                          CU_TENSOR_MAP_INTERLEAVE_NONE,
                          map.swizzle128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                      fmt::format("cuTensorMapEncodeTiled for {}", what), std::string(kernel));
}

} // namespace kiln::runtime::cuda
