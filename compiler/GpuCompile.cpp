// compileGpuKernels: a graph's GPU kernels through a GPU backend to PTX,
// without a device (what `kiln compile --target cuda` shows).
#include "compiler/Compile.h"

#include "compiler/Pipeline.h"

#include <fmt/format.h>

#include <chrono>
#include <iostream>

namespace kiln {

Expected<GpuKernels> compileGpuKernels(const ir::Graph &userGraph, const CompileOptions &options,
                                       CompileReport *report) {
  auto start = std::chrono::steady_clock::now();
  std::ostream &dump = options.dumpStream ? *options.dumpStream : std::cerr;
  CompileReport localReport;
  CompileReport &r = report ? *report : localReport;
  r = {};
  KILN_TRY(codegen::GpuTarget gpu, codegen::gpuTargetNamed(options.gpuArch));
  r.target = fmt::format("cuda {}", gpu.archName());
  KILN_TRY(compiler::LoweredProgram program,
           compiler::lowerProgram(userGraph, options, gpu, dump, r));
  GpuKernels result{gpu.archName(), std::move(program.kernels), {}};
  r.totalSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

} // namespace kiln
