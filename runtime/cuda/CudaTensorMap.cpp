#include "runtime/cuda/CudaTensorMap.h"

#include "runtime/TensorMapRules.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <optional>

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
  std::optional<std::string> problem = tensorMapArgProblem(map);
  if (!problem && !tensorMapType(map.dtype))
    problem =
        fmt::format("has dtype {}, which the copy engine does not move", dtypeName(map.dtype));
  if (!problem && base % 16 != 0)
    problem = fmt::format("starts at {:#x}, not at a 16-byte boundary", base);
  if (problem)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("kernel '{}': {} {}", kernel, mapName(map), *problem));
  return {};
}

Expected<void> encodeTensorMap(const CudaDriver &driver, const TensorMapArg &map, DevicePtr base,
                               std::string_view kernel, CUtensorMap &out) {
  KILN_TRY_VOID(checkTensorMap(map, base, kernel));
  const std::string what = mapName(map);
  const CUtensorMapDataType type = *tensorMapType(map.dtype); // checked above
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

TensorMapCache::TensorMapCache(std::vector<TensorMapArg> maps)
    : args_(std::move(maps)), maps_(args_.size()), bases_(args_.size()) {}

Expected<const CUtensorMap *> TensorMapCache::forLaunch(const CudaDriver &driver,
                                                        const DevicePtr *args,
                                                        std::string_view kernel) {
  for (size_t m = 0; m < args_.size(); ++m) {
    const DevicePtr base = args[args_[m].param];
    if (bases_[m] == base)
      continue;
    bases_[m].reset(); // until the encoding succeeds
    KILN_TRY_VOID(encodeTensorMap(driver, args_[m], base, kernel, maps_[m]));
    bases_[m] = base;
  }
  return maps_.data();
}

} // namespace kiln::runtime::cuda
