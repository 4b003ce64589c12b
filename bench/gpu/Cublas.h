// cuBLAS, loaded with dlopen: SGEMM and GemmEx are the benchmark's yardsticks for
// kiln's matmuls. Only the benchmark uses it, so kiln itself never links cuBLAS.
#pragma once

#include "runtime/Device.h"
#include "support/DType.h"
#include "support/Error.h"

#include <memory>
#include <string>

namespace kiln::bench {

class Cublas {
public:
  /// Loads libcublas (the CUDA 13 toolkit's libcublas.so.13 first) and creates
  /// a handle bound to `stream`, in fp32 math without tf32.
  static Expected<std::unique_ptr<Cublas>> open(runtime::Stream stream);
  ~Cublas();
  Cublas(const Cublas &) = delete;
  Cublas &operator=(const Cublas &) = delete;

  /// c[m,n] = a[m,k] @ b[k,n], all row-major fp32 on the device, enqueued on
  /// the handle's stream.
  Expected<void> sgemmRowMajor(int m, int n, int k, runtime::DevicePtr a, runtime::DevicePtr b,
                               runtime::DevicePtr c);
  /// c[m,n] = a[m,k] @ b[k,n] with cublasGemmEx, all row-major on the device,
  /// enqueued on the handle's stream. `dtype` is the operands' and the
  /// result's: bf16 or f16 (accumulating in fp32, CUBLAS_COMPUTE_32F), or f32,
  /// in tf32 on the tensor cores when `allowTf32` (CUBLAS_COMPUTE_32F_FAST_TF32)
  /// and in fp32 otherwise. CUBLAS_GEMM_DEFAULT picks the algorithm.
  Expected<void> gemmExRowMajor(DType dtype, bool allowTf32, int m, int n, int k,
                                runtime::DevicePtr a, runtime::DevicePtr b, runtime::DevicePtr c);
  /// c[m,n] (bf16) = x[m,k] @ w[n,k]^T with e4m3 operands, both row-major with K contiguous,
  /// through cublasLt (loaded on first use; plain cuBLAS has no fp8 GEMM), accumulating in
  /// fp32 with unit scales and no workspace, enqueued on the handle's stream.
  Expected<void> gemmE4m3RowMajor(int m, int n, int k, runtime::DevicePtr x,
                                  runtime::DevicePtr w, runtime::DevicePtr c);
  /// The library file that was loaded.
  const std::string &libraryName() const { return libraryName_; }

private:
  Cublas() = default;
  struct Api;
  struct LtApi; // CublasLt.cpp
  struct LtApiDeleter {
    void operator()(LtApi *api) const;
  };
  Expected<void> openLt();
  void destroyLt();
  std::unique_ptr<Api> api_;
  std::unique_ptr<LtApi, LtApiDeleter> lt_;
  void *library_ = nullptr, *ltLibrary_ = nullptr;
  void *handle_ = nullptr, *ltHandle_ = nullptr;
  runtime::Stream stream_;
  std::string libraryName_;
};

} // namespace kiln::bench
