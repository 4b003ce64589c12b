// Kernel IR -> readable CUDA C: one translation unit holding a small prelude
// of helpers and one extern "C" __global__ function per GPU kernel.
#pragma once

#include "codegen/Target.h"
#include "ir/kernel/KernelIR.h"
#include "support/Error.h"

#include <span>
#include <string>

namespace kiln::codegen::cuda {

/// Readable CUDA C for GPU kernels (each with the structure kir::gpuLaunchOf
/// accepts): one translation unit, a small prelude of helpers, then one
/// `extern "C" __global__ void __launch_bounds__(threads) <name>(...)` per
/// kernel, parameters in the kernel's order. A kernel that is not a valid GPU
/// kernel is a VerifyError naming it; IR the backend does not handle
/// (arithmetic on narrow floats) is Unsupported.
Expected<std::string> emitCudaSource(std::span<const kir::Kernel> kernels, const GpuTarget &target);

/// The prelude alone (conversions, wrapping integer math, NaN-propagating
/// min/max), as emitCudaSource writes it for `target`.
std::string cudaPrelude(const GpuTarget &target);

} // namespace kiln::codegen::cuda
