// A launch-plan step that runs its kernel on the SIMT simulator, so a compiled
// model with `--target sim` runs every GPU kernel through the same executor.
#pragma once

#include "ir/kernel/KernelIR.h"
#include "runtime/LaunchPlan.h"
#include "runtime/sim/Simulator.h"

#include <memory>

namespace kiln::sim {

/// An invoker that simulates `kernel` on the buffers of a step (their sizes
/// are the kernel's parameter sizes).
std::shared_ptr<const runtime::KernelInvoker> makeSimInvoker(kir::Kernel kernel,
                                                             SimOptions options = {});

} // namespace kiln::sim
