// The few cuBLAS entry points SGEMM and GemmEx need, resolved with dlsym. The
// types are spelled as cuBLAS's ABI has them (handles are pointers, enums are
// ints), so no CUDA header is needed to build the benchmark.
#include "bench/gpu/Cublas.h"

#include "bench/gpu/DlSymbol.h"

#include <fmt/format.h>

#include <cstdlib>
#include <dlfcn.h>
#include <vector>

namespace kiln::bench {

namespace {

constexpr int kCublasStatusSuccess = 0;
constexpr int kCublasOpN = 0;
// CUBLAS_DEFAULT_MATH: fp32 GEMMs stay on the CUDA cores. (TF32 would need
// CUBLAS_TF32_TENSOR_OP_MATH or NVIDIA_TF32_OVERRIDE=1, which main() clears.)
constexpr int kCublasDefaultMath = 0;
// GemmEx's enums, from CUDA 13.0's library_types.h (cudaDataType_t) and
// cublas_api.h (cublasComputeType_t, cublasGemmAlgo_t); their values are ABI.
constexpr int kCudaR32F = 0;   // CUDA_R_32F
constexpr int kCudaR16F = 2;   // CUDA_R_16F
constexpr int kCudaR16BF = 14; // CUDA_R_16BF
constexpr int kCublasCompute32F = 68;         // CUBLAS_COMPUTE_32F
constexpr int kCublasCompute32FFastTf32 = 77; // CUBLAS_COMPUTE_32F_FAST_TF32
constexpr int kCublasGemmDefault = -1;        // CUBLAS_GEMM_DEFAULT

} // namespace

struct Cublas::Api {
  int (*create)(void **handle) = nullptr;
  int (*destroy)(void *handle) = nullptr;
  int (*setStream)(void *handle, void *stream) = nullptr;
  int (*setMathMode)(void *handle, int mode) = nullptr;
  int (*sgemm)(void *handle, int transa, int transb, int m, int n, int k, const float *alpha,
               const float *a, int lda, const float *b, int ldb, const float *beta, float *c,
               int ldc) = nullptr;
  int (*gemmEx)(void *handle, int transa, int transb, int m, int n, int k, const void *alpha,
                const void *a, int aType, int lda, const void *b, int bType, int ldb,
                const void *beta, void *c, int cType, int ldc, int computeType,
                int algo) = nullptr;
};

Expected<std::unique_ptr<Cublas>> Cublas::open(runtime::Stream stream) {
  std::vector<std::string> candidates = {"libcublas.so.13", "libcublas.so"};
  if (const char *cudaHome = std::getenv("CUDA_HOME"))
    candidates.push_back(fmt::format("{}/lib64/libcublas.so.13", cudaHome));
  candidates.push_back("/usr/local/cuda/lib64/libcublas.so.13");
  std::unique_ptr<Cublas> cublas(new Cublas);
  std::string tried;
  for (const std::string &candidate : candidates) {
    cublas->library_ = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (cublas->library_) {
      cublas->libraryName_ = candidate;
      break;
    }
    tried += fmt::format("\n  {}: {}", candidate, dlerror());
  }
  if (!cublas->library_)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("cannot load cuBLAS (set LD_LIBRARY_PATH or CUDA_HOME to the "
                                 "CUDA toolkit):{}",
                                 tried));
  auto api = std::make_unique<Api>();
  auto resolve = [&](auto &slot, const char *symbol) {
    return resolveSymbol(cublas->library_, cublas->libraryName_, symbol, slot);
  };
  KILN_TRY_VOID(resolve(api->create, "cublasCreate_v2"));
  KILN_TRY_VOID(resolve(api->destroy, "cublasDestroy_v2"));
  KILN_TRY_VOID(resolve(api->setStream, "cublasSetStream_v2"));
  KILN_TRY_VOID(resolve(api->setMathMode, "cublasSetMathMode"));
  KILN_TRY_VOID(resolve(api->sgemm, "cublasSgemm_v2"));
  KILN_TRY_VOID(resolve(api->gemmEx, "cublasGemmEx"));
  cublas->api_ = std::move(api);
  if (int status = cublas->api_->create(&cublas->handle_); status != kCublasStatusSuccess)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("cublasCreate_v2 failed with status {}", status));
  // kiln's streams are CUstreams; the runtime API's cudaStream_t is the same handle.
  if (int status = cublas->api_->setStream(cublas->handle_, stream.handle);
      status != kCublasStatusSuccess)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("cublasSetStream_v2 failed with status {}", status));
  cublas->stream_ = stream;
  if (int status = cublas->api_->setMathMode(cublas->handle_, kCublasDefaultMath);
      status != kCublasStatusSuccess)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("cublasSetMathMode failed with status {}", status));
  return cublas;
}

Cublas::~Cublas() {
  if (handle_ && api_)
    api_->destroy(handle_);
  destroyLt();
  // The library stays loaded: unloading cuBLAS while the CUDA runtime it
  // initialized is alive is not safe.
}

Expected<void> Cublas::sgemmRowMajor(int m, int n, int k, runtime::DevicePtr a,
                                     runtime::DevicePtr b, runtime::DevicePtr c) {
  // cuBLAS is column-major: a row-major [m,n] C is a column-major [n,m] C^T,
  // and C^T = B^T A^T, where the row-major B and A buffers are exactly the
  // column-major B^T and A^T.
  const float alpha = 1.0f, beta = 0.0f;
  int status = api_->sgemm(handle_, kCublasOpN, kCublasOpN, n, m, k, &alpha,
                           reinterpret_cast<const float *>(b), n,
                           reinterpret_cast<const float *>(a), k, &beta,
                           reinterpret_cast<float *>(c), n);
  if (status != kCublasStatusSuccess)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("cublasSgemm_v2 ({}x{}x{}) failed with status {}", m, n, k, status));
  return {};
}

Expected<void> Cublas::gemmExRowMajor(DType dtype, bool allowTf32, int m, int n, int k,
                                      runtime::DevicePtr a, runtime::DevicePtr b,
                                      runtime::DevicePtr c) {
  int dataType = 0, computeType = kCublasCompute32F;
  switch (dtype) {
  case DType::BF16: dataType = kCudaR16BF; break;
  case DType::F16: dataType = kCudaR16F; break;
  case DType::F32:
    dataType = kCudaR32F;
    computeType = allowTf32 ? kCublasCompute32FFastTf32 : kCublasCompute32F;
    break;
  default:
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("gemmExRowMajor: operands must be bf16, f16 or f32, not {}",
                                 dtypeName(dtype)));
  }
  // Row-major as in sgemmRowMajor: C^T = B^T A^T. alpha and beta are fp32 for
  // every CUBLAS_COMPUTE_32F* compute type.
  const float alpha = 1.0f, beta = 0.0f;
  int status = api_->gemmEx(handle_, kCublasOpN, kCublasOpN, n, m, k, &alpha,
                            reinterpret_cast<const void *>(b), dataType, n,
                            reinterpret_cast<const void *>(a), dataType, k, &beta,
                            reinterpret_cast<void *>(c), dataType, n, computeType,
                            kCublasGemmDefault);
  if (status != kCublasStatusSuccess) {
    std::string_view mode = computeType == kCublasCompute32FFastTf32 ? " tf32" : "";
    return makeError(ErrorCode::Unavailable,
                     fmt::format("cublasGemmEx ({}{}, {}x{}x{}) failed with status {}",
                                 dtypeName(dtype), mode, m, n, k, status));
  }
  return {};
}

} // namespace kiln::bench
