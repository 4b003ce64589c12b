// The lockstep machine of the SIMT simulator: runs a compiled kernel block by
// block, every statement for all active threads of the block at once.
#pragma once

#include "ir/kernel/GpuLaunch.h"
#include "runtime/sim/SimProgram.h"
#include "runtime/sim/Simulator.h"

#include <cstddef>
#include <span>

namespace kiln::sim {

/// Runs `program` (compiled from `kernel`, whose launch shape is `launch`) over
/// parameter memory already checked against the kernel's parameter list.
Expected<SimStats> runSimtMachine(const kir::Kernel &kernel, const SimProgram &program,
                                  const kir::GpuLaunch &launch,
                                  std::span<const std::span<std::byte>> params,
                                  const SimOptions &options);

} // namespace kiln::sim
