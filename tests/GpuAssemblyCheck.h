// A check every test that makes GPU kernels runs: the kernels compile to PTX
// through both GPU backends (LLVM NVPTX and CUDA C through NVRTC), ptxas
// assembles each module for the target, and no kernel spills registers.
#pragma once

#include "codegen/Ptx.h"
#include "codegen/Ptxas.h"
#include "codegen/cuda/CudaSource.h"
#include "codegen/cuda/Nvrtc.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <string>
#include <vector>

namespace kiln::test {

/// The resources ptxas reported for one kernel from one backend.
struct AssembledKernel {
  std::string backend; ///< "llvm" or "nvrtc"
  codegen::KernelResources resources;
};

/// Compiles `kernels` for `target` with both backends, assembles each PTX with
/// ptxas and FAIL_CHECKs any error or spill, naming `context`. A missing tool
/// (ptxas, NVRTC) is a WARN, once per process, and skips only what needs it.
/// Returns every kernel's resources.
inline std::vector<AssembledKernel> checkGpuKernelsAssemble(const std::vector<kir::Kernel> &kernels,
                                                            const codegen::GpuTarget &target,
                                                            const std::string &context) {
  static bool warnedPtxas = false, warnedNvrtc = false;
  std::vector<AssembledKernel> assembled;
  if (kernels.empty())
    return assembled;
  auto assemble = [&](const std::string &backend, const std::string &ptx) {
    auto result = codegen::runPtxas(ptx, target);
    if (!result && result.error().code() == ErrorCode::Unavailable) {
      if (!warnedPtxas)
        WARN("ptxas is unavailable, GPU kernels are not assembled: " << result.error().message());
      warnedPtxas = true;
      return;
    }
    if (!result) {
      FAIL_CHECK(context << ": ptxas rejected the " << backend << " PTX for "
                         << target.archName() << ": " << result.error().str());
      return;
    }
    for (const codegen::KernelResources &kernel : result->kernels) {
      if (kernel.spillStoreBytes != 0 || kernel.spillLoadBytes != 0)
        FAIL_CHECK(context << ": kernel " << kernel.name << " (" << backend << ", "
                           << target.archName() << ") spills: " << kernel.spillStoreBytes
                           << " bytes stored, " << kernel.spillLoadBytes << " loaded, "
                           << kernel.registers << " registers");
      assembled.push_back({backend, kernel});
    }
  };

  auto llvmPtx = codegen::compilePtxWithLlvm(kernels, target);
  if (llvmPtx)
    assemble("llvm", *llvmPtx);
  else
    FAIL_CHECK(context << ": LLVM NVPTX failed for " << target.archName() << ": "
                       << llvmPtx.error().str());

  auto source = codegen::cuda::emitCudaSource(kernels, target);
  if (!source) {
    FAIL_CHECK(context << ": CUDA C emission failed: " << source.error().str());
    return assembled;
  }
  auto nvrtc = codegen::cuda::compileWithNvrtc(*source, "kiln_test.cu", target);
  if (!nvrtc && nvrtc.error().code() == ErrorCode::Unavailable) {
    if (!warnedNvrtc)
      WARN("NVRTC is unavailable, the CUDA C backend is not compiled: " << nvrtc.error().message());
    warnedNvrtc = true;
  } else if (!nvrtc) {
    FAIL_CHECK(context << ": NVRTC rejected the CUDA C for " << target.archName() << ": "
                       << nvrtc.error().str());
  } else {
    assemble("nvrtc", nvrtc->ptx);
  }
  return assembled;
}

} // namespace kiln::test
