// Internal to codegen/llvm: turning a CpuTarget into an LLVM TargetMachine, and the O3
// pipeline both LLVM backends (host and NVPTX) run with one.
#pragma once

#include "codegen/Target.h"
#include "support/Error.h"

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>

namespace kiln::codegen::host {

/// Registers LLVM's native target with the target registry (once per process).
void initializeNativeTarget();

/// An O3 TargetMachine for `target` (triple, cpu, features; small code model,
/// position-independent code: one object serves the JIT, the kernel cache and
/// an AOT bundle's shared object). Unsupported when LLVM has no backend for
/// the triple.
Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const CpuTarget &target);

/// Whether f16 <-> f32 conversions are single instructions on `target` (x86
/// F16C, AArch64), so the emitter can use LLVM's half type instead of a call.
bool hasNativeHalfConversions(const CpuTarget &target);

/// LLVM's default O3 pipeline with `machine`'s cost model (loop vectorization, interleaving
/// and unrolling; SLP vectorization when asked), honouring the loops' llvm.loop metadata.
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine, bool slpVectorize);

} // namespace kiln::codegen::host
