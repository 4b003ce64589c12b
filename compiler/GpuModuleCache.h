// The kernel cache's key for a GPU module: everything that decides the PTX and
// cubin a set of kernels compiles to (docs/caching.md lists it).
#pragma once

#include "codegen/Target.h"
#include "compiler/Compile.h"
#include "ir/kernel/KernelIR.h"
#include "runtime/cache/KernelCache.h"

#include <string>
#include <vector>

namespace kiln::compiler {

/// The full key text of the module `kernels` make for `target` with `backend`:
/// a one-line summary first (what `kiln cache ls` shows), then kiln's version
/// and build, the target's cache string, the backend and its toolchain versions
/// (LLVM and ptxas, or NVRTC) and options, the environment variables that pick
/// the toolchain, and the canonical kernel IR of every kernel in order.
/// Toolchains that cannot be found are keyed as such, so the key never fails.
std::string gpuModuleCacheKey(const std::vector<kir::Kernel> &kernels,
                              const codegen::GpuTarget &target, GpuBackend backend);

/// The environment variables that change GPU code, in key order.
inline constexpr const char *kGpuCacheEnvironment[] = {"CUDA_HOME", "KILN_LIBDEVICE", "KILN_NVRTC",
                                                       "KILN_PTXAS"};

/// The CUDA toolkit's version as the kernel cache key names it (NVRTC's version
/// text, "unavailable" without NVRTC): part of a GPU tuning record's target.
/// (The LLVM backend's key names ptxas by path and file time, which differ
/// between machines with the same toolkit, so records use NVRTC's version.)
std::string gpuToolkitVersion();

/// The identity of the kiln compiler library itself (its GNU build id), so a
/// rebuilt kiln with the same version number never reuses a stale entry.
std::string compilerBuildId();

/// The version of the LLVM linked into kiln ("19.1.7"), for cache keys.
std::string compilerLlvmVersion();

/// The process-wide cache `options` ask for: the disk tier at
/// options.kernelCacheDir when set, else where the environment says
/// (runtime::cacheLocationFromEnvironment). `where` receives a description
/// of the disk tier ("~/.cache/kiln", "disabled by KILN_CACHE=off").
runtime::KernelCache &kernelCacheFor(const CompileOptions &options, std::string *where = nullptr);

} // namespace kiln::compiler
