// compileGpuKernels: a graph's GPU kernels through a GPU backend to PTX,
// without a device (what `kiln compile --target cuda` shows, and the dumps of
// the sim target).
#include "compiler/GpuCompile.h"

#include "codegen/Ptx.h"
#include "codegen/cuda/CudaSource.h"
#include "codegen/cuda/Nvrtc.h"
#include "compiler/Pipeline.h"

#include <fmt/format.h>

#include <chrono>
#include <iostream>

namespace kiln {

namespace compiler {

Expected<std::string> emitGpuCode(const std::vector<kir::Kernel> &kernels,
                                  const codegen::GpuTarget &target, const CompileOptions &options,
                                  std::ostream &dump) {
  if (kernels.empty())
    return std::string();
  bool wantCuda = options.gpuBackend == GpuBackend::Nvrtc || (options.dump & kDumpCuda);
  std::string source;
  if (wantCuda) {
    KILN_TRY(source, codegen::cuda::emitCudaSource(kernels, target));
    if (options.dump & kDumpCuda)
      dump << "// ---- CUDA C for " << target.archName() << "\n" << source;
  }
  std::string ptx;
  if (options.gpuBackend == GpuBackend::Nvrtc) {
    KILN_TRY(codegen::cuda::NvrtcOutput output,
             codegen::cuda::compileWithNvrtc(source, "kiln_kernels.cu", target));
    ptx = std::move(output.ptx);
  } else {
    std::string llvmIr;
    KILN_TRY(ptx, codegen::compilePtxWithLlvm(kernels, target,
                                              (options.dump & kDumpLlvm) ? &llvmIr : nullptr));
    if (options.dump & kDumpLlvm)
      dump << "// ---- NVPTX LLVM IR for " << target.archName() << "\n" << llvmIr;
  }
  if (options.dump & kDumpPtx)
    dump << "// ---- PTX for " << target.archName() << " ("
         << (options.gpuBackend == GpuBackend::Nvrtc ? "nvrtc" : "llvm") << ")\n"
         << ptx;
  return ptx;
}

} // namespace compiler

Expected<GpuKernels> compileGpuKernels(const ir::Graph &userGraph, const CompileOptions &options,
                                       CompileReport *report) {
  auto start = std::chrono::steady_clock::now();
  std::ostream &dump = options.dumpStream ? *options.dumpStream : std::cerr;
  CompileReport localReport;
  CompileReport &r = report ? *report : localReport;
  r = {};
  KILN_TRY(codegen::GpuTarget gpu, codegen::gpuTargetNamed(
                                      options.gpuArch.empty() ? kDefaultGpuArch : options.gpuArch));
  r.target = fmt::format("cuda {} ({})", gpu.archName(),
                         options.gpuBackend == GpuBackend::Nvrtc ? "CUDA C through NVRTC"
                                                                 : "LLVM NVPTX");
  KILN_TRY(compiler::LoweredProgram program,
           compiler::lowerProgram(userGraph, options, gpu, dump, r));
  auto codegenStart = std::chrono::steady_clock::now();
  KILN_TRY(std::string ptx, compiler::emitGpuCode(program.kernels, gpu, options, dump));
  auto now = std::chrono::steady_clock::now();
  r.codegenSeconds = std::chrono::duration<double>(now - codegenStart).count();
  r.totalSeconds = std::chrono::duration<double>(now - start).count();
  return GpuKernels{gpu.archName(), std::move(program.kernels), std::move(ptx)};
}

} // namespace kiln
