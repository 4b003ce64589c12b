// NVRTC, loaded with dlopen at run time: CUDA C source -> PTX and cubin for
// one GPU architecture. libkiln never links libnvrtc, so it builds and runs
// where the CUDA toolkit is absent and says so when NVRTC is asked for.
#pragma once

#include "codegen/Target.h"
#include "support/Error.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::codegen::cuda {

/// What one NVRTC compile produced.
struct NvrtcOutput {
  std::string ptx;              ///< for compute_XX (compute_90a): the portable form
  std::vector<std::byte> cubin; ///< for sm_XX (sm_90a): the binary the driver loads as is
  std::string log;              ///< NVRTC's warnings, if any (both compiles)
};

/// Compiles CUDA C with NVRTC for target.archName(): PTX for compute_XX and a
/// cubin for sm_XX. NVRTC is found as $KILN_NVRTC when set (nothing else is
/// tried then), else libnvrtc.so.13 or libnvrtc.so on the loader's path, in
/// $CUDA_HOME/lib64 and in /usr/local/cuda/lib64. A missing library or symbol
/// is ErrorCode::Unavailable naming what was tried; a program NVRTC rejects is
/// ErrorCode::CompileError with NVRTC's log and the offending source line as notes.
Expected<NvrtcOutput> compileWithNvrtc(std::string_view source, std::string_view programName,
                                       const GpuTarget &target);

/// The PTX half of compileWithNvrtc alone (one NVRTC compile, for compute_XX; `cubin` stays
/// empty), for callers that assemble the PTX themselves: the tests' ptxas checks, which paid
/// for a second whole compile per module to make a cubin they never read.
Expected<NvrtcOutput> compilePtxWithNvrtc(std::string_view source, std::string_view programName,
                                          const GpuTarget &target);

/// NVRTC's version ("13.0"), or Unavailable when it cannot be loaded.
Expected<std::string> nvrtcVersion();

/// The options every compile passes besides the architecture: no fast math,
/// and no contraction of a*b+c (the kernel IR asks for fma explicitly).
std::vector<std::string> nvrtcBaseOptions();

} // namespace kiln::codegen::cuda
