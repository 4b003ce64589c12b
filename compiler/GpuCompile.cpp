// compileGpuKernels: a graph's GPU kernels through a GPU backend to PTX and a
// cubin, without a device (what `kiln compile --target cuda` shows, and the
// dumps of the sim target), with the kernel cache in front of the backends.
#include "compiler/GpuCompile.h"

#include "ir/kernel/TensorMap.h"

#include "codegen/Ptx.h"
#include "codegen/Ptxas.h"
#include "codegen/cuda/CudaSource.h"
#include "codegen/cuda/Nvrtc.h"
#include "compiler/GpuModuleCache.h"
#include "compiler/Pipeline.h"
#include "compiler/tuning/OfflineGpuTarget.h"
#include "compiler/tuning/TuningKeys.h"
#include "ir/kernel/GpuLaunch.h"

#include <fmt/format.h>

#include <algorithm>

#include <chrono>
#include <cstring>
#include <iostream>
#include <unistd.h>

namespace kiln {

namespace compiler {
namespace {

std::string_view backendName(GpuBackend backend) {
  return backend == GpuBackend::Nvrtc ? "nvrtc" : "llvm";
}

std::string toString(const std::vector<std::byte> &bytes) {
  return std::string(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

std::vector<std::byte> toBytes(const std::string &text) {
  std::vector<std::byte> bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  return bytes;
}

/// Compiles `kernels` with the chosen backend, printing the llvm and cuda dumps.
Expected<GpuModuleImage> compileModule(const std::vector<kir::Kernel> &kernels,
                                       const codegen::GpuTarget &target,
                                       const CompileOptions &options, std::ostream &dump) {
  bool wantCuda = options.gpuBackend == GpuBackend::Nvrtc || (options.dump & kDumpCuda);
  std::string source;
  if (wantCuda) {
    KILN_TRY(source, codegen::cuda::emitCudaSource(kernels, target));
    if (options.dump & kDumpCuda)
      dump << "// ---- CUDA C for " << target.archName() << "\n" << source;
  }
  GpuModuleImage image;
  if (options.gpuBackend == GpuBackend::Nvrtc) {
    KILN_TRY(codegen::cuda::NvrtcOutput output,
             codegen::cuda::compileWithNvrtc(source, "kiln_kernels.cu", target));
    image.ptx = std::move(output.ptx);
    image.cubin = std::move(output.cubin);
    return image;
  }
  std::string llvmIr;
  KILN_TRY(image.ptx, codegen::compilePtxWithLlvm(kernels, target,
                                                  (options.dump & kDumpLlvm) ? &llvmIr : nullptr));
  if (options.dump & kDumpLlvm)
    dump << "// ---- NVPTX LLVM IR for " << target.archName() << "\n" << llvmIr;
  // Without ptxas the driver JITs the PTX at load time; with it, a warm start
  // skips that too.
  if (access(codegen::ptxasPath().c_str(), X_OK) == 0) {
    KILN_TRY(codegen::PtxasResult assembled, codegen::runPtxas(image.ptx, target));
    image.cubin = std::move(assembled.cubin);
  }
  return image;
}

} // namespace

Expected<GpuModuleImage> emitGpuCode(const std::vector<kir::Kernel> &kernels,
                                     const codegen::GpuTarget &target,
                                     const CompileOptions &options, std::ostream &dump,
                                     CompileReport *report) {
  if (kernels.empty())
    return GpuModuleImage();
  CompileReport unused;
  CompileReport &r = report ? *report : unused;
  auto printPtx = [&](const GpuModuleImage &image) {
    if (options.dump & kDumpPtx)
      dump << "// ---- PTX for " << target.archName() << " (" << backendName(options.gpuBackend)
           << ")\n"
           << image.ptx;
  };
  if (!options.useKernelCache) {
    r.kernelCache = "off";
    KILN_TRY(GpuModuleImage image, compileModule(kernels, target, options, dump));
    printPtx(image);
    return image;
  }

  std::string where;
  runtime::KernelCache &cache = kernelCacheFor(options, &where);
  std::string key = gpuModuleCacheKey(kernels, target, options.gpuBackend);
  // The cache keeps PTX and cubin, not LLVM IR: an llvm dump needs a real compile.
  bool needsCompile = options.dump & kDumpLlvm;
  if (!needsCompile) {
    runtime::CacheLookup found = cache.lookup(key);
    r.warnings.insert(r.warnings.end(), found.warnings.begin(), found.warnings.end());
    const std::string *ptx = found.entry ? found.entry->section("ptx") : nullptr;
    if (ptx) {
      GpuModuleImage image;
      image.ptx = *ptx;
      if (const std::string *cubin = found.entry->section("cubin"))
        image.cubin = toBytes(*cubin);
      image.fromCache = true;
      r.kernelCache = found.tier == runtime::CacheTier::Memory ? "hit (memory)" : "hit (disk)";
      if (options.dump & kDumpCuda) { // cheap to regenerate, and not worth caching
        KILN_TRY(std::string source, codegen::cuda::emitCudaSource(kernels, target));
        dump << "// ---- CUDA C for " << target.archName() << "\n" << source;
      }
      printPtx(image);
      return image;
    }
  }

  KILN_TRY(GpuModuleImage image, compileModule(kernels, target, options, dump));
  printPtx(image);
  runtime::CacheEntry entry;
  entry.sections["ptx"] = image.ptx;
  if (!image.cubin.empty())
    entry.sections["cubin"] = toString(image.cubin);
  entry.sections["meta"] = fmt::format("arch={} backend={} kernels={}\n", target.archName(),
                                       backendName(options.gpuBackend), kernels.size());
  runtime::CacheStore stored = cache.store(key, entry);
  r.warnings.insert(r.warnings.end(), stored.warnings.begin(), stored.warnings.end());
  std::string outcome = !cache.root()            ? fmt::format("memory only: {}", where)
                        : stored.writtenToDisk ? fmt::format("written to {}", where)
                                               : std::string("not written");
  r.kernelCache = needsCompile ? fmt::format("bypassed for the llvm dump ({})", outcome)
                               : fmt::format("miss ({})", outcome);
  return image;
}

std::string offlineGpuFingerprint(const codegen::GpuTarget &target) {
  return tuning::targetFingerprint(target, {"unavailable", gpuToolkitVersion(), "unknown"});
}

Expected<runtime::LaunchDims> launchDimsOf(const kir::Kernel &kernel) {
  KILN_TRY(kir::GpuLaunch launch, kir::gpuLaunchOf(kernel));
  runtime::LaunchDims dims;
  for (int axis = 0; axis < 3; ++axis) {
    dims.grid[axis] = static_cast<uint32_t>(launch.grid[axis]);
    dims.block[axis] = static_cast<uint32_t>(launch.block[axis]);
  }
  dims.sharedBytes = static_cast<uint32_t>(launch.dynamicSharedBytes());
  for (const kir::TensorMapPtr &map : kir::tensorMapsOf(kernel)) {
    auto param = std::ranges::find(kernel.params, map->global);
    KILN_CHECK(param != kernel.params.end(), "a tensor map of a buffer that is no parameter");
    dims.tensorMaps.push_back({static_cast<int>(param - kernel.params.begin()),
                               map->global->dtype, map->dims, map->strides, map->box,
                               map->swizzle == kir::TmaSwizzle::Bytes128});
  }
  return dims;
}

std::string simGpuFingerprint(const codegen::GpuTarget &target) {
  return tuning::targetFingerprint(target, {"sim", "sim", "sim"});
}

} // namespace compiler

Expected<GpuKernels> compileGpuKernels(const ir::Graph &userGraph, const CompileOptions &options,
                                       CompileReport *report) {
  auto start = std::chrono::steady_clock::now();
  std::ostream &dump = options.dumpStream ? *options.dumpStream : std::cerr;
  CompileReport localReport;
  CompileReport &r = report ? *report : localReport;
  r = {};
  KILN_TRY(codegen::GpuTarget named, codegen::gpuTargetNamed(
                                        options.gpuArch.empty() ? kDefaultGpuArch : options.gpuArch));
  KILN_TRY(compiler::OfflineGpuTarget offline, compiler::offlineGpuTarget(named, options));
  const codegen::GpuTarget &gpu = offline.target;
  r.target = fmt::format("cuda {} ({})", gpu.archName(),
                         options.gpuBackend == GpuBackend::Nvrtc ? "CUDA C through NVRTC"
                                                                 : "LLVM NVPTX");
  KILN_TRY(compiler::LoweredProgram program,
           compiler::lowerProgram(userGraph, options, gpu, offline.fingerprint, dump, r));
  if (!offline.tunedDevice.empty())
    r.tuning += fmt::format("; schedules for the tuned {}", offline.tunedDevice);
  auto codegenStart = std::chrono::steady_clock::now();
  KILN_TRY(compiler::GpuModuleImage image,
           compiler::emitGpuCode(program.kernels, gpu, options, dump, &r));
  auto now = std::chrono::steady_clock::now();
  r.codegenSeconds = std::chrono::duration<double>(now - codegenStart).count();
  r.totalSeconds = std::chrono::duration<double>(now - start).count();
  return GpuKernels{gpu.archName(), std::move(program.kernels), std::move(image.ptx),
                    std::move(image.cubin)};
}

} // namespace kiln
