// What the kernel-IR verifier's messages print (internal to the verifier): a statement's
// first line, and whether a node's operands are all present so that printing it cannot fail.
#pragma once

#include "ir/kernel/KernelIR.h"

#include <string>
#include <string_view>

namespace kiln::kir {

/// "for", "store", "target": how a message names a statement of `kind` (its keyword).
std::string_view statementKindName(StmtKind kind);

/// Whether `e` and every operand below it are present (non-null).
bool hasAllOperands(const ExprPtr &e);

/// Whether every operand a statement needs is present. Bodies may be empty (null);
/// predicates and an if's else branch are optional. Its child statements are not looked at.
bool hasAllOperands(const Stmt &s);

/// The first printed line of a complete statement, without its opening brace or body:
/// "for i in [0, 64) serial", "store f32 out[i] = 0.0f32".
std::string statementSummary(const Stmt &stmt);

} // namespace kiln::kir
