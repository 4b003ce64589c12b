// Internal to codegen/llvm: kernel IR -> an LLVM module for the host.
#pragma once

#include "codegen/Target.h"
#include "ir/kernel/KernelIR.h"
#include "support/Error.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <span>

namespace kiln::codegen::host {

/// One module holding every kernel of `kernels` (and their outlined parallel
/// bodies), with `machine`'s triple and data layout, verified, not optimized.
Expected<std::unique_ptr<llvm::Module>> buildHostModule(std::span<const kir::Kernel> kernels,
                                                        const CpuTarget &target,
                                                        const llvm::TargetMachine &machine,
                                                        llvm::LLVMContext &context);

/// The C functions generated host code may call, by name, with their
/// addresses in this process: the JIT defines them as absolute symbols.
struct RuntimeSymbol {
  const char *name;
  void *address;
};
std::span<const RuntimeSymbol> hostRuntimeSymbols();

} // namespace kiln::codegen::host
