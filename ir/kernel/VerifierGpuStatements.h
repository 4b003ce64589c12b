// The verifier's rules for the GPU statements (atomics, shuffles, tensor cores, async copies,
// wgmma, mbarriers, bulk tensor copies): what their scopes, dtypes, fragment sizes and counts
// must be. Verifier.cpp has already checked their expressions and scopes; these look at the
// statement's own fields. Internal to the verifier.
#pragma once

#include "ir/kernel/KernelIR.h"

#include <optional>
#include <string>

namespace kiln::kir {

/// What is wrong with the fields of GPU statement `stmt` (nullopt: nothing, or not a GPU
/// statement). The expressions' types are those the verifier has checked.
std::optional<std::string> gpuStatementProblem(const Stmt &stmt);

/// What is wrong with a shuffle's operand types.
std::optional<std::string> shuffleProblem(const Shuffle &shuffle);

/// Its name in messages: "a barrier", "an async copy", ...
std::string_view gpuStatementName(StmtKind kind);

} // namespace kiln::kir
