// The cuda target's ending of a compile: kernels for the device's architecture,
// loaded through the CUDA driver, run by the device executor (compiler-internal).
#pragma once

#include "codegen/Target.h"
#include "compiler/Compile.h"
#include "compiler/Devices.h"
#include "runtime/cuda/CudaDevice.h"

#include <ostream>

namespace kiln::compiler {

/// The GPU target kernels are compiled for on `device`: options.gpuArch when
/// set (an error when the device cannot run it), else the device's own
/// architecture (PTX for sm_90 on newer GPUs, which the driver compiles), with
/// the device's SM count and L2 size.
Expected<codegen::GpuTarget> gpuTargetFor(const runtime::cuda::CudaDeviceProperties &device,
                                          const std::string &requestedArch);

/// The tuning fingerprint of `target` on `device`: the driver's, the toolkit's
/// and cuDNN's versions with the target's figures (docs/tuning.md).
std::string deviceGpuFingerprint(const codegen::GpuTarget &target,
                                 const runtime::cuda::CudaDeviceProperties &device);

/// Lowers, generates and loads `graph`'s kernels on the device.
Expected<CompiledModel> compileForCuda(const ir::Graph &graph, const CompileOptions &options,
                                       const DeviceHandle<runtime::cuda::CudaDevice> &gpu,
                                       std::ostream &dump, CompileReport &report);

} // namespace kiln::compiler
