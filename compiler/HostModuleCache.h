// The CPU target's share of the kernel cache: the host object code of a
// compile's kernels, so a warm start links cached machine code instead of
// running LLVM (docs/caching.md).
#pragma once

#include "codegen/Target.h"
#include "codegen/llvm/HostBackend.h"
#include "compiler/Compile.h"
#include "ir/kernel/KernelIR.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::compiler {

/// The full key text of the host object `kernels` make for `target`: a
/// one-line summary ("cpu znver5 2 kernels: k0_... k1_..."), kiln's version and
/// build id (which covers the LLVM linked into it), LLVM's version, the
/// target's cache string (triple, CPU, features, vector width, cores, caches)
/// and the canonical kernel IR of every kernel in order.
std::string hostModuleCacheKey(const std::vector<kir::Kernel> &kernels,
                               const codegen::CpuTarget &target);

/// The kernels' host code, JIT-linked in this process: from the kernel cache
/// when an entry matches (options.useKernelCache), else compiled by LLVM and
/// stored there. Sets report.kernelCache to what the cache did and adds its
/// warnings to report.warnings; an entry that cannot be loaded is reported
/// and rebuilt.
Expected<std::shared_ptr<codegen::HostModule>>
hostModuleFor(const std::vector<kir::Kernel> &kernels, const codegen::CpuTarget &target,
              const CompileOptions &options, CompileReport &report);

} // namespace kiln::compiler
