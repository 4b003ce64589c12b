// The GPU the test_gpu executable runs on, opened once by its main before any test.
#pragma once

#include "compiler/Compile.h"
#include "runtime/cuda/CudaDevice.h"

/// The device opened by test_gpu's main (GPU 0); tests only run when it opened.
kiln::runtime::cuda::CudaDevice &gpuTestDevice();

namespace kiln::test {

/// Compile options for the test GPU through `backend`.
inline CompileOptions cudaOptions(GpuBackend backend) {
  CompileOptions options;
  options.target = TargetKind::Cuda;
  options.gpuBackend = backend;
  return options;
}

inline const char *backendName(GpuBackend backend) {
  return backend == GpuBackend::Llvm ? "llvm" : "nvrtc";
}

} // namespace kiln::test
