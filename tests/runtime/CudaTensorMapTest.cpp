// The tensor maps a launch encodes for bulk tensor copies, without a GPU: a stand-in for the
// driver's cuTensorMapEncodeTiled records what kiln passes it -- dims innermost first, strides
// of the outer dims in bytes, the box, unit element strides, the swizzle, zero fill out of
// bounds -- every rule of cuda.h that a map can break is refused by kiln first, naming the
// kernel, the parameter and the rule, without asking the driver, and a kernel's maps are
// encoded again only for a buffer that moved.
#include "runtime/cuda/CudaTensorMap.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

using namespace kiln;
using namespace kiln::runtime;
using namespace kiln::runtime::cuda;
using Catch::Matchers::Contains;

namespace {

/// What the stand-in encoder was last given.
struct EncodeCall {
  int calls = 0;
  CUtensorMapDataType type{};
  cuuint32_t rank = 0;
  void *address = nullptr;
  std::vector<cuuint64_t> dims, strides;
  std::vector<cuuint32_t> box, elementStrides;
  CUtensorMapInterleave interleave{};
  CUtensorMapSwizzle swizzle{};
  CUtensorMapFloatOOBfill oobFill{};
  CUresult result = CUDA_SUCCESS;
};
EncodeCall lastCall;

CUresult CUDAAPI standInEncode(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                               void *address, const cuuint64_t *dims, const cuuint64_t *strides,
                               const cuuint32_t *box, const cuuint32_t *elementStrides,
                               CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                               CUtensorMapL2promotion, CUtensorMapFloatOOBfill oobFill) {
  ++lastCall.calls;
  lastCall.type = type;
  lastCall.rank = rank;
  lastCall.address = address;
  lastCall.dims.assign(dims, dims + rank);
  lastCall.strides.assign(strides, strides + rank - 1);
  lastCall.box.assign(box, box + rank);
  lastCall.elementStrides.assign(elementStrides, elementStrides + rank);
  lastCall.interleave = interleave;
  lastCall.swizzle = swizzle;
  lastCall.oobFill = oobFill;
  std::memset(map, 0xab, sizeof(*map));
  return lastCall.result;
}

CUresult CUDAAPI standInErrorName(CUresult, const char **name) {
  *name = "CUDA_ERROR_INVALID_VALUE";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI standInErrorString(CUresult, const char **text) {
  *text = "invalid argument";
  return CUDA_SUCCESS;
}

CudaDriver standInDriver() {
  CudaDriver driver;
  driver.api.tensorMapEncodeTiled = standInEncode;
  driver.api.getErrorName = standInErrorName;
  driver.api.getErrorString = standInErrorString;
  return driver;
}

/// A bf16 operand of 300 rows of 520, read in 64 x 128 boxes with the 128-byte swizzle, as a
/// GEMM's A map is.
TensorMapArg operandMap() {
  return TensorMapArg{.param = 3, .dtype = DType::BF16, .dims = {520, 300}, .strides = {520},
                      .box = {64, 128}, .swizzle128 = true};
}

} // namespace

TEST_CASE("tensor maps reach the driver innermost dim first, strides in bytes", "[cuda][tma]") {
  CudaDriver driver = standInDriver();
  lastCall = {};
  CUtensorMap map;
  REQUIRE(encodeTensorMap(driver, operandMap(), 0x7f0000001000, "gemm", map));
  CHECK(lastCall.calls == 1);
  CHECK(lastCall.type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  CHECK(lastCall.rank == 2);
  CHECK(lastCall.address == reinterpret_cast<void *>(uintptr_t{0x7f0000001000}));
  CHECK(lastCall.dims == std::vector<cuuint64_t>{520, 300});
  CHECK(lastCall.strides == std::vector<cuuint64_t>{1040}); // 520 bf16 a row
  CHECK(lastCall.box == std::vector<cuuint32_t>{64, 128});
  CHECK(lastCall.elementStrides == std::vector<cuuint32_t>{1, 1});
  CHECK(lastCall.interleave == CU_TENSOR_MAP_INTERLEAVE_NONE);
  CHECK(lastCall.swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
  CHECK(lastCall.oobFill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE); // edges read as zeros
  // A batched e4m3 operand: rank 3, bytes through the copy engine, no swizzle.
  TensorMapArg batched{.param = 0, .dtype = DType::F8E4M3, .dims = {128, 40, 6},
                       .strides = {128, 5120}, .box = {128, 64, 1}, .swizzle128 = false};
  REQUIRE(encodeTensorMap(driver, batched, 0x10000, "bmm", map));
  CHECK(lastCall.type == CU_TENSOR_MAP_DATA_TYPE_UINT8);
  CHECK(lastCall.strides == std::vector<cuuint64_t>{128, 5120});
  CHECK(lastCall.swizzle == CU_TENSOR_MAP_SWIZZLE_NONE);
}

TEST_CASE("tensor maps the driver would refuse name the rule they break", "[cuda][tma]") {
  CudaDriver driver = standInDriver();
  lastCall = {};
  CUtensorMap map;
  auto refusal = [&](TensorMapArg arg, DevicePtr base = 0x1000) {
    auto encoded = encodeTensorMap(driver, arg, base, "gemm_tma", map);
    REQUIRE_FALSE(encoded);
    CHECK(encoded.error().code() == ErrorCode::InvalidArgument);
    CHECK_THAT(encoded.error().message(), Contains("kernel 'gemm_tma'"));
    CHECK_THAT(encoded.error().message(), Contains("the tensor map of parameter 3"));
    return encoded.error().message();
  };
  CHECK_THAT(refusal(operandMap(), 0x1008), Contains("starts at 0x1008, not at a 16-byte"));
  TensorMapArg wide = operandMap();
  wide.dtype = DType::F64; // 64 x 8 bytes: past the swizzle's span first
  CHECK_THAT(refusal(wide), Contains("an inner box of 512 bytes"));
  TensorMapArg m = operandMap();
  m.strides = {};
  CHECK_THAT(refusal(m), Contains("is malformed"));
  m = operandMap();
  m.dims = {520, 300, 2, 2, 2, 2};
  m.box = {64, 128, 1, 1, 1, 1};
  m.strides = {520, 1, 1, 1, 1};
  CHECK_THAT(refusal(m), Contains("is malformed"));
  m = operandMap();
  m.box = {64, 512};
  CHECK_THAT(refusal(m), Contains("a box of 512 along dim 1 (1 to 256)"));
  m = operandMap();
  m.dims = {520, 0};
  CHECK_THAT(refusal(m), Contains("dim 1 of 0 elements"));
  m = operandMap();
  m.strides = {70}; // a row of 70 bf16: 140 bytes
  CHECK_THAT(refusal(m), Contains("steps dim 1 by 70 elements of 2 bytes"));
  m = operandMap();
  m.box = {12, 128}; // 24 bytes
  m.swizzle128 = false;
  CHECK_THAT(refusal(m), Contains("an inner box of 24 bytes (a multiple of 16)"));
  m = operandMap();
  m.box = {128, 128}; // 256 bytes under a 128-byte swizzle
  CHECK_THAT(refusal(m), Contains("past the 128-byte swizzle's span"));
  CHECK(lastCall.calls == 0); // none of them reached the driver
  // What the driver refuses anyway comes back as its error, naming the map.
  lastCall.result = CUDA_ERROR_INVALID_VALUE;
  auto refused = encodeTensorMap(driver, operandMap(), 0x1000, "gemm_tma", map);
  REQUIRE_FALSE(refused);
  CHECK(lastCall.calls == 1);
  CHECK_THAT(refused.error().message(), Contains("cuTensorMapEncodeTiled for the tensor map of "
                                                 "parameter 3"));
  CHECK_THAT(refused.error().message(), Contains("CUDA_ERROR_INVALID_VALUE"));
}

TEST_CASE("a kernel's tensor maps are encoded again only when a buffer moves", "[cuda][tma]") {
  CudaDriver driver = standInDriver();
  lastCall = {};
  TensorMapArg b = operandMap();
  b.param = 1;
  TensorMapCache cache({operandMap(), b});
  std::vector<DevicePtr> args = {0x1000, 0x2000, 0x3000, 0x4000}; // parameters 3 and 1 hold maps
  auto first = cache.forLaunch(driver, args.data(), "gemm_tma");
  REQUIRE(first);
  CHECK(lastCall.calls == 2);
  // The same buffers: the maps as they were, no call.
  auto again = cache.forLaunch(driver, args.data(), "gemm_tma");
  REQUIRE(again);
  CHECK(*again == *first);
  CHECK(lastCall.calls == 2);
  // Parameter 1 moved: only its map is encoded again, over the new address.
  args[1] = 0x5000;
  REQUIRE(cache.forLaunch(driver, args.data(), "gemm_tma"));
  CHECK(lastCall.calls == 3);
  CHECK(lastCall.address == reinterpret_cast<void *>(uintptr_t{0x5000}));
  // A failed encoding is not kept: the next launch on that buffer asks the driver again.
  args[3] = 0x6000;
  lastCall.result = CUDA_ERROR_INVALID_VALUE;
  CHECK_FALSE(cache.forLaunch(driver, args.data(), "gemm_tma"));
  CHECK(lastCall.calls == 4);
  lastCall.result = CUDA_SUCCESS;
  REQUIRE(cache.forLaunch(driver, args.data(), "gemm_tma"));
  CHECK(lastCall.calls == 5);
  REQUIRE(cache.forLaunch(driver, args.data(), "gemm_tma"));
  CHECK(lastCall.calls == 5);
}
