// cuBLAS SGEMM, loaded with dlopen: the benchmark's yardstick for kiln's fp32
// matmul. Only the benchmark uses it, so kiln itself never links cuBLAS.
#pragma once

#include "runtime/Device.h"
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
  /// The library file that was loaded.
  const std::string &libraryName() const { return libraryName_; }

private:
  Cublas() = default;
  struct Api;
  std::unique_ptr<Api> api_;
  void *library_ = nullptr;
  void *handle_ = nullptr;
  std::string libraryName_;
};

} // namespace kiln::bench
