// The kernel IR passes (one per file in passes/kernel/) and the straight-line
// pipeline that runs them on every lowered kernel before codegen.
#pragma once

#include "ir/kernel/KernelIR.h"

#include <cstdint>

namespace kiln::kir {

/// simplify (Simplify.cpp): constant folding with the evaluator's exact
/// semantics, algebraic identities on index math (including the div/mod of a
/// split index, (i * c + j) / c -> i when j is in [0, c) by its loop bounds),
/// and removal of dead control flow: loops of extent 0, loops of extent 1
/// (host loops only), constant conditions and predicates, lets of constants
/// and variables, empty blocks. Runs to a fixed point (at most
/// kMaxSimplifyRounds rounds). Lowering emits straightforward index math and
/// relies on this pass to make it short.
ExprPtr simplifyExpr(const ExprPtr &expr);
StmtPtr simplifyStmt(const StmtPtr &stmt);
Kernel simplifyKernel(Kernel kernel);

inline constexpr int kMaxSimplifyRounds = 8;

/// hoist (Hoist.cpp): loop-invariant code motion out of host loops (serial,
/// unrolled, vectorized, parallel). Moves lets whose value does not depend on
/// the loop (its variable, variables bound inside it, buffers stored inside
/// it) to just before the loop, and binds invariant integer subexpressions
/// that contain a multiply, divide or modulo to new lets there. A let that
/// could fault (one that loads: the load may be in bounds only when the loop
/// runs) moves only out of a loop that certainly runs, and only from where it
/// always ran. (Integer division never traps in kernel IR, see ScalarOps.h.) GPU-bound loops
/// are left alone: each thread runs their body once.
StmtPtr hoistLoopInvariants(const StmtPtr &stmt);
Kernel hoistLoopInvariants(Kernel kernel);

/// The default kernel pipeline (KernelPipeline.cpp): simplify, hoist, simplify. With `verify`,
/// the input (a lowered kernel) and the result of every pass go through kir::verifyKernel; a
/// kernel it rejects is a compiler bug, reported as a KILN_CHECK failure with the verifier's
/// message, the pass and the kernel's text. Without `verify`, the process-wide switch below
/// decides (CompileOptions::verifyKernels overrides it per compile).
Kernel runKernelPasses(Kernel kernel, bool verify);
Kernel runKernelPasses(Kernel kernel);

/// Whether runKernelPasses verifies by default (process-wide): on in debug builds (no NDEBUG),
/// off in release, either way overridden by the environment variable KILN_VERIFY_KERNEL_IR=1/0
/// read at start-up; the test executables turn it on.
bool verifyKernelPassesEnabled();
void setVerifyKernelPasses(bool on);

/// How many times runKernelPasses has run the verifier, process-wide: what shows that a
/// compile verified its kernels.
uint64_t kernelPassVerifications();

} // namespace kiln::kir
