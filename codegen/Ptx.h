// GPU kernels -> PTX through LLVM's NVPTX backend (the LLVM types stay inside
// codegen/llvm).
#pragma once

#include "codegen/Target.h"
#include "ir/kernel/KernelIR.h"
#include "support/Error.h"

#include <span>
#include <string>

namespace kiln::codegen {

/// Compiles GPU kernels (each with the structure kir::gpuLaunchOf accepts) into
/// one PTX module for `target` through LLVM's NVPTX backend at O3, with
/// libdevice linked for the math functions. Optionally returns the optimized
/// LLVM IR text. Errors: VerifyError for a kernel that is not a GPU kernel
/// (naming it), Unavailable when libdevice is missing ($KILN_LIBDEVICE, else
/// $CUDA_HOME/nvvm/libdevice/libdevice.10.bc, else
/// /usr/local/cuda/nvvm/libdevice/libdevice.10.bc).
Expected<std::string> compilePtxWithLlvm(std::span<const kir::Kernel> kernels,
                                         const GpuTarget &target, std::string *llvmIr = nullptr);

} // namespace kiln::codegen
