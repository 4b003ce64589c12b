// The kernel-IR verifier: the one place that checks a kernel is well formed (types, scopes,
// where GPU statements may stand), so every consumer -- the kernel passes, the backends, the
// evaluator and the simulator -- can trust its input instead of re-checking it.
#pragma once

#include "ir/kernel/KernelIR.h"
#include "support/Error.h"

namespace kiln::kir {

/// The widest vector an expression may be: 64 lanes, a 512-bit register of bytes.
inline constexpr int kMaxVectorLanes = 64;

struct VerifyOptions {
  int maxLanes = kMaxVectorLanes;
};

/// Checks `kernel` against every rule of docs/kernel-ir.md ("The verifier"): expression types,
/// indices and predicates, variables and buffers used only in their scopes, allocations,
/// stores, loops, GPU statements (only inside the thread loops, with the scopes, dtypes and
/// fragment sizes they demand), barriers under uniform control flow and the launch structure
/// of GPU kernels. The error (ErrorCode::VerifyError) starts "kernel <name>: ", says what is
/// wrong and what was expected, and names the statement (its first printed line) and the
/// expression at fault.
Expected<void> verifyKernel(const Kernel &kernel, const VerifyOptions &options = {});

} // namespace kiln::kir
