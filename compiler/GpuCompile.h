// GPU code generation shared by the cuda target and the dumps of the sim
// target (compiler-internal).
#pragma once

#include "codegen/Target.h"
#include "compiler/Compile.h"
#include "ir/kernel/KernelIR.h"

#include <ostream>
#include <string>
#include <vector>

namespace kiln::compiler {

/// The PTX module of `kernels` from options.gpuBackend (LLVM NVPTX, or CUDA C
/// through NVRTC), printing the llvm, cuda and ptx dumps options.dump asks for.
Expected<std::string> emitGpuCode(const std::vector<kir::Kernel> &kernels,
                                  const codegen::GpuTarget &target, const CompileOptions &options,
                                  std::ostream &dump);

} // namespace kiln::compiler
