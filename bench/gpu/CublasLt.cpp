// cublasLt for the e4m3 yardstick: plain cuBLAS has no fp8 GEMM. Loaded on first use with
// dlopen; types spelled as cublasLt's ABI has them (descriptors are pointers, enums ints) and
// enum values from CUDA 13.0's cublasLt.h and library_types.h, so no CUDA header is needed.
#include "bench/gpu/Cublas.h"

#include "bench/gpu/DlSymbol.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <dlfcn.h>
#include <vector>

namespace kiln::bench {

namespace {

constexpr int kStatusSuccess = 0;
constexpr int kCudaR32F = 0;       // CUDA_R_32F
constexpr int kCudaR16BF = 14;     // CUDA_R_16BF
constexpr int kCudaR8FE4M3 = 28;   // CUDA_R_8F_E4M3
constexpr int kCompute32F = 68;    // CUBLAS_COMPUTE_32F
constexpr int kOpN = 0, kOpT = 1;  // CUBLAS_OP_N, CUBLAS_OP_T
constexpr int kDescTransA = 3;     // CUBLASLT_MATMUL_DESC_TRANSA (int32)
constexpr int kDescTransB = 4;     // CUBLASLT_MATMUL_DESC_TRANSB (int32)
constexpr int kPrefMaxWorkspace = 1; // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES (uint64)

/// cublasLtMatmulHeuristicResult_t: the algorithm (8 words), its workspace, status, waves.
struct HeuristicResult {
  std::array<uint64_t, 8> algo;
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};

} // namespace

struct Cublas::LtApi {
  int (*create)(void **handle) = nullptr;
  int (*destroy)(void *handle) = nullptr;
  int (*descCreate)(void **desc, int computeType, int scaleType) = nullptr;
  int (*descDestroy)(void *desc) = nullptr;
  int (*descSet)(void *desc, int attribute, const void *value, size_t bytes) = nullptr;
  int (*layoutCreate)(void **layout, int type, uint64_t rows, uint64_t cols, int64_t ld) = nullptr;
  int (*layoutDestroy)(void *layout) = nullptr;
  int (*preferenceCreate)(void **preference) = nullptr;
  int (*preferenceDestroy)(void *preference) = nullptr;
  int (*preferenceSet)(void *preference, int attribute, const void *value, size_t bytes) = nullptr;
  int (*heuristic)(void *handle, void *desc, void *a, void *b, void *c, void *d, void *preference,
                   int requested, HeuristicResult *results, int *returned) = nullptr;
  int (*matmul)(void *handle, void *desc, const void *alpha, const void *a, void *aLayout,
                const void *b, void *bLayout, const void *beta, const void *c, void *cLayout,
                void *d, void *dLayout, const void *algo, void *workspace, size_t workspaceBytes,
                void *stream) = nullptr;
};

void Cublas::LtApiDeleter::operator()(LtApi *api) const { delete api; }

Expected<void> Cublas::openLt() {
  if (lt_)
    return {};
  std::vector<std::string> candidates = {"libcublasLt.so.13", "libcublasLt.so"};
  if (const char *cudaHome = std::getenv("CUDA_HOME"))
    candidates.push_back(fmt::format("{}/lib64/libcublasLt.so.13", cudaHome));
  candidates.push_back("/usr/local/cuda/lib64/libcublasLt.so.13");
  std::string tried, name;
  for (const std::string &candidate : candidates) {
    ltLibrary_ = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (ltLibrary_) {
      name = candidate;
      break;
    }
    tried += fmt::format("\n  {}: {}", candidate, dlerror());
  }
  if (!ltLibrary_)
    return makeError(ErrorCode::Unavailable, fmt::format("cannot load cublasLt:{}", tried));
  auto api = std::make_unique<LtApi>();
  auto resolve = [&](auto &slot, const char *symbol) {
    return resolveSymbol(ltLibrary_, name, symbol, slot);
  };
  KILN_TRY_VOID(resolve(api->create, "cublasLtCreate"));
  KILN_TRY_VOID(resolve(api->destroy, "cublasLtDestroy"));
  KILN_TRY_VOID(resolve(api->descCreate, "cublasLtMatmulDescCreate"));
  KILN_TRY_VOID(resolve(api->descDestroy, "cublasLtMatmulDescDestroy"));
  KILN_TRY_VOID(resolve(api->descSet, "cublasLtMatmulDescSetAttribute"));
  KILN_TRY_VOID(resolve(api->layoutCreate, "cublasLtMatrixLayoutCreate"));
  KILN_TRY_VOID(resolve(api->layoutDestroy, "cublasLtMatrixLayoutDestroy"));
  KILN_TRY_VOID(resolve(api->preferenceCreate, "cublasLtMatmulPreferenceCreate"));
  KILN_TRY_VOID(resolve(api->preferenceDestroy, "cublasLtMatmulPreferenceDestroy"));
  KILN_TRY_VOID(resolve(api->preferenceSet, "cublasLtMatmulPreferenceSetAttribute"));
  KILN_TRY_VOID(resolve(api->heuristic, "cublasLtMatmulAlgoGetHeuristic"));
  KILN_TRY_VOID(resolve(api->matmul, "cublasLtMatmul"));
  if (int status = api->create(&ltHandle_); status != kStatusSuccess)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("cublasLtCreate failed with status {}", status));
  lt_.reset(api.release());
  return {};
}

void Cublas::destroyLt() {
  if (lt_ && ltHandle_)
    lt_->destroy(ltHandle_);
}

Expected<void> Cublas::gemmE4m3RowMajor(int m, int n, int k, runtime::DevicePtr x,
                                        runtime::DevicePtr w, runtime::DevicePtr c) {
  KILN_TRY_VOID(openLt());
  const LtApi &lt = *lt_;
  // Column-major, as cuBLAS sees row-major buffers: C^T [n,m] = W [n,k] . X^T [k,m]. The row-major
  // w[n,k] is a column-major k x n matrix (ld k) used transposed, x[m,k] a column-major k x m
  // one used as is: the "TN" form fp8 GEMMs require (both operands K-major).
  void *desc = nullptr, *aLayout = nullptr, *bLayout = nullptr, *cLayout = nullptr,
       *preference = nullptr;
  auto release = [&] {
    for (void *layout : {aLayout, bLayout, cLayout})
      if (layout)
        lt.layoutDestroy(layout);
    if (desc)
      lt.descDestroy(desc);
    if (preference)
      lt.preferenceDestroy(preference);
  };
  auto check = [&](int status, std::string_view what) -> Expected<void> {
    if (status == kStatusSuccess)
      return {};
    release();
    return makeError(ErrorCode::Unavailable,
                     fmt::format("cublasLt e4m3 GEMM {}x{}x{}: {} failed with status {}", m, n, k,
                                 what, status));
  };
  const int transA = kOpT, transB = kOpN;
  const uint64_t noWorkspace = 0;
  KILN_TRY_VOID(check(lt.descCreate(&desc, kCompute32F, kCudaR32F), "cublasLtMatmulDescCreate"));
  KILN_TRY_VOID(check(lt.descSet(desc, kDescTransA, &transA, sizeof transA), "TRANSA"));
  KILN_TRY_VOID(check(lt.descSet(desc, kDescTransB, &transB, sizeof transB), "TRANSB"));
  KILN_TRY_VOID(check(lt.layoutCreate(&aLayout, kCudaR8FE4M3, uint64_t(k), uint64_t(n), k),
                      "the layout of w"));
  KILN_TRY_VOID(check(lt.layoutCreate(&bLayout, kCudaR8FE4M3, uint64_t(k), uint64_t(m), k),
                      "the layout of x"));
  KILN_TRY_VOID(check(lt.layoutCreate(&cLayout, kCudaR16BF, uint64_t(n), uint64_t(m), n),
                      "the layout of c"));
  KILN_TRY_VOID(check(lt.preferenceCreate(&preference), "cublasLtMatmulPreferenceCreate"));
  KILN_TRY_VOID(check(lt.preferenceSet(preference, kPrefMaxWorkspace, &noWorkspace,
                                       sizeof noWorkspace),
                      "the workspace preference"));
  HeuristicResult best{};
  int found = 0;
  KILN_TRY_VOID(check(lt.heuristic(ltHandle_, desc, aLayout, bLayout, cLayout, cLayout, preference,
                                   1, &best, &found),
                      "cublasLtMatmulAlgoGetHeuristic"));
  if (found == 0)
    KILN_TRY_VOID(check(-1, "finding an algorithm (none for this shape)"));
  const float alpha = 1.0f, beta = 0.0f;
  KILN_TRY_VOID(check(lt.matmul(ltHandle_, desc, &alpha, reinterpret_cast<const void *>(w), aLayout,
                                reinterpret_cast<const void *>(x), bLayout, &beta,
                                reinterpret_cast<const void *>(c), cLayout,
                                reinterpret_cast<void *>(c), cLayout, best.algo.data(), nullptr, 0,
                                stream_.handle),
                      "cublasLtMatmul"));
  release();
  return {};
}

} // namespace kiln::bench
