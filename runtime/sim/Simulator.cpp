// The simulator's entry points: check the parameters against the kernel, read
// the launch shape, compile the kernel and run it on the lockstep machine.
#include "runtime/sim/Simulator.h"

#include "ir/kernel/GpuLaunch.h"
#include "runtime/sim/SimProgram.h"
#include "runtime/sim/SimtMachine.h"

#include <fmt/format.h>

#include <vector>

namespace kiln::sim {

namespace {

std::unexpected<Error> kernelError(const kir::Kernel &kernel, ErrorCode code,
                                   std::string_view message) {
  return makeError(code, fmt::format("kernel {}: {}", kernel.name, message));
}

} // namespace

Expected<SimStats> simulateKernel(const kir::Kernel &kernel,
                                  std::span<const std::span<std::byte>> params,
                                  const SimOptions &options) {
  if (params.size() != kernel.params.size())
    return kernelError(kernel, ErrorCode::InvalidArgument,
                       fmt::format("takes {} buffers, got {}", kernel.params.size(),
                                   params.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    const kir::Buffer &buffer = *kernel.params[i];
    auto bytes = static_cast<uint64_t>(buffer.size) * dtypeByteSize(buffer.dtype);
    if (buffer.size < 0 || params[i].size() != bytes)
      return kernelError(kernel, ErrorCode::InvalidArgument,
                         fmt::format("parameter {} ({}[{}]) needs {} bytes, got {}", buffer.name,
                                     dtypeName(buffer.dtype), buffer.size, bytes,
                                     params[i].size()));
    if (buffer.scope != kir::MemScope::Global)
      return kernelError(kernel, ErrorCode::VerifyError,
                         fmt::format("parameter {} is not a global buffer", buffer.name));
  }
  auto launch = kir::gpuLaunchOf(kernel, options.maxThreadsPerBlock);
  if (!launch)
    return kernelError(kernel, launch.error().code(),
                       fmt::format("not a GPU kernel the simulator can run: {}",
                                   launch.error().message()));
  KILN_TRY(SimProgram program, compileSimProgram(kernel));
  return runSimtMachine(kernel, program, *launch, params, options);
}

Expected<SimStats> simulateKernel(const kir::Kernel &kernel, std::span<HostTensor> params,
                                  const SimOptions &options) {
  if (params.size() != kernel.params.size())
    return kernelError(kernel, ErrorCode::InvalidArgument,
                       fmt::format("takes {} buffers, got {}", kernel.params.size(),
                                   params.size()));
  std::vector<std::span<std::byte>> memory;
  for (size_t i = 0; i < params.size(); ++i) {
    const kir::Buffer &buffer = *kernel.params[i];
    if (params[i].dtype() != buffer.dtype || params[i].numElements() != buffer.size)
      return kernelError(kernel, ErrorCode::InvalidArgument,
                         fmt::format("parameter {} is {}[{}], got a tensor {}", buffer.name,
                                     dtypeName(buffer.dtype), buffer.size, params[i].typeStr()));
    memory.push_back(std::as_writable_bytes(params[i].bytes()));
  }
  return simulateKernel(kernel, std::span<const std::span<std::byte>>(memory), options);
}

} // namespace kiln::sim
