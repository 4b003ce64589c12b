// The verifier's rules for the GPU statements (atomics, shuffles, tensor cores, async copies,
// wgmma, mbarriers, bulk tensor copies): what their scopes, dtypes, fragment sizes and counts
// must be: each statement's own rules, written once. The checked constructors (NodeChecks.cpp)
// hold every node to them after checking its operands are present and its indices i64; the
// verifier reports them after checking its expressions and scopes.
#pragma once

#include "ir/kernel/KernelIR.h"

#include <optional>
#include <string>

namespace kiln::kir {

/// What is wrong with the fields of GPU statement `stmt` (nullopt: nothing, or not a GPU
/// statement). The expressions' types are those the verifier has checked.
std::optional<std::string> gpuStatementProblem(const Stmt &stmt);

/// What is wrong with target instruction operands that match op's signature (the parser asks
/// before it builds the statement).
std::optional<std::string> targetInstrProblem(TargetOp op,
                                              const std::vector<TargetOperand> &operands);

/// What is wrong with an atomic's buffer and value type (the parser asks before it builds one).
std::optional<std::string> atomicProblem(AtomicOp op, const Buffer &buffer, Type value);

/// What is wrong with a shuffle's operand types.
std::optional<std::string> shuffleProblem(const Shuffle &shuffle);

/// Its name in messages: "a barrier", "an async copy", ...
std::string_view gpuStatementName(const Stmt &stmt);

} // namespace kiln::kir
