// The host backend: kernel IR -> LLVM IR -> O3 -> machine code for this CPU,
// loaded with LLVM's ORC JIT. LLVM stays behind this header (no LLVM types).
//
// Calling convention of every compiled kernel:
//   extern "C" void <kernel.name>(void *const *args);
// args[i] is the base pointer of kernel.params[i]: a dense array of its dtype
// (bool as one byte 0/1, f16/bf16 as their 16-bit patterns, f8 as bytes).
// Every pointer must be 64-byte aligned (the executor's buffers and
// HostTensor are): the generated code assumes it. Parameters may alias (the
// executor runs elementwise kernels in place), so none is marked noalias.
// Parallel loops run on kiln::cpu::ThreadPool::global().
#pragma once

#include "codegen/Target.h"
#include "ir/kernel/KernelIR.h"
#include "support/Error.h"

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace kiln::codegen {

/// The signature of a compiled host kernel.
using HostKernelFn = void (*)(void *const *args);

/// The LLVM IR of one kernel as text, as compiled for `target` (what
/// `kiln compile --dump=llvm` prints): before optimization, or after the O3
/// pipeline when `optimized`. Unsupported kernel IR is an error naming the kernel.
Expected<std::string> emitHostLlvmIr(const kir::Kernel &kernel, const CpuTarget &target,
                                     bool optimized);

/// JIT-compiled machine code for a set of kernels, and the memory that holds it.
/// Immutable once built, so lookups may come from any thread.
class HostModule {
public:
  struct Impl;
  explicit HostModule(std::unique_ptr<Impl> impl);
  ~HostModule();
  HostModule(const HostModule &) = delete;
  HostModule &operator=(const HostModule &) = delete;

  /// The entry point of the kernel named `kernelName` (a HostKernelFn), or
  /// nullptr when the module has no such kernel.
  void *lookup(std::string_view kernelName) const;

  /// lookup() cast to the kernel signature.
  HostKernelFn lookupKernel(std::string_view kernelName) const {
    return reinterpret_cast<HostKernelFn>(lookup(kernelName));
  }

private:
  std::unique_ptr<Impl> impl_;
};

/// Compiles `kernels` (distinct names), optimized at O3 for `target`, and
/// JIT-links them in this process: emitHostObjects on compileThreads() threads
/// followed by loadHostObjects, so code from the kernel cache and fresh code are
/// loaded the same way. `target` must describe this machine (normally hostCpuTarget()).
/// Errors name the failing kernel.
Expected<std::shared_ptr<HostModule>> compileHostModule(std::span<const kir::Kernel> kernels,
                                                        const CpuTarget &target);

/// `kernels` (distinct names) in one LLVM module optimized at O3 for `target`,
/// as a relocatable ELF object with position-independent code: what the JIT
/// links (compileHostModule, the kernel cache) and what an AOT bundle links
/// into a shared object. Each kernel is an exported function; the object's
/// undefined symbols are the runtime helpers (kiln_cpu_*, in kiln_rt) and
/// libm/libc functions.
Expected<std::string> emitHostObject(std::span<const kir::Kernel> kernels,
                                     const CpuTarget &target);

/// emitHostObject on `kernels` split into at most `parts` objects of about the same work,
/// compiled at once, each on a thread of its own with its own LLVM context: code generation
/// on every core. Each kernel's code is what emitHostObject makes of it. One part (or one
/// kernel) gives one object.
Expected<std::vector<std::string>> emitHostObjects(std::span<const kir::Kernel> kernels,
                                                   const CpuTarget &target, int parts);

/// The parts a compile here splits its kernels into: this machine's cores, at most 8.
int compileThreads();

/// JIT-links `objects` (from emitHostObjects or emitHostObject for `target`, which must
/// describe this machine) together into this process, binding the runtime helpers by
/// address, and resolves every kernel in `names`. A malformed object or a missing kernel is
/// an error naming it; nothing is left loaded then.
Expected<std::shared_ptr<HostModule>> loadHostObjects(std::span<const std::string> objects,
                                                      std::span<const std::string> names,
                                                      const CpuTarget &target);

} // namespace kiln::codegen
