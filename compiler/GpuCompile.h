// GPU code generation shared by the cuda target and the dumps of the sim
// target (compiler-internal), through the kernel cache.
#pragma once

#include "codegen/Target.h"
#include "compiler/Compile.h"
#include "ir/kernel/KernelIR.h"
#include "runtime/Device.h"

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace kiln::compiler {

/// One compiled GPU module: what the CUDA runtime loads.
struct GpuModuleImage {
  std::string ptx;              ///< every kernel, for the target's compute_XX
  std::vector<std::byte> cubin; ///< for the exact sm_XX; empty when ptxas is unavailable
  bool fromCache = false;       ///< read from the kernel cache rather than compiled
};

/// The module of `kernels` from options.gpuBackend (LLVM NVPTX then ptxas, or
/// CUDA C through NVRTC), taken from the kernel cache when an entry for the
/// same key is there (docs/caching.md) and kept there otherwise. Prints the
/// llvm, cuda and ptx dumps options.dump asks for (an llvm dump compiles,
/// since the cache keeps no LLVM IR). `report`, when given, receives the
/// cache outcome in kernelCache and any cache warnings in warnings.
Expected<GpuModuleImage> emitGpuCode(const std::vector<kir::Kernel> &kernels,
                                     const codegen::GpuTarget &target,
                                     const CompileOptions &options, std::ostream &dump,
                                     CompileReport *report = nullptr);

/// The tuning fingerprint of GPU code compiled without a GPU and without a
/// tuned device's records (compileGpuKernels, AOT bundles; see
/// offlineGpuTarget): "driver=unavailable" (docs/tuning.md).
std::string offlineGpuFingerprint(const codegen::GpuTarget &target);
/// How a GPU kernel is launched: its grid and block from its loop nest, and the dynamic shared
/// memory it declares past the static limit (kir::GpuLaunch::dynamicSharedBytes).
Expected<runtime::LaunchDims> launchDimsOf(const kir::Kernel &kernel);

/// The tuning fingerprint of the SIMT simulator running `target`'s kernels.
std::string simGpuFingerprint(const codegen::GpuTarget &target);

} // namespace kiln::compiler
