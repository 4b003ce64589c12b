// Internal to codegen/llvm: turning a CpuTarget into an LLVM TargetMachine.
#pragma once

#include "codegen/Target.h"
#include "support/Error.h"

#include <llvm/Target/TargetMachine.h>

#include <memory>

namespace kiln::codegen::host {

/// Registers LLVM's native target with the target registry (once per process).
void initializeNativeTarget();

/// What the machine code is for: this process's JIT, or a position-independent
/// object to link into a shared object (AOT bundles).
enum class HostCodeUse { Jit, SharedObject };

/// An O3 TargetMachine for `target` (triple, cpu, features; default code
/// model). Unsupported when LLVM has no backend for the triple.
Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const CpuTarget &target, HostCodeUse use = HostCodeUse::Jit);

/// Whether f16 <-> f32 conversions are single instructions on `target` (x86
/// F16C, AArch64), so the emitter can use LLVM's half type instead of a call.
bool hasNativeHalfConversions(const CpuTarget &target);

} // namespace kiln::codegen::host
