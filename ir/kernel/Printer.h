// The deterministic text form of kernel IR (syntax in docs/kernel-ir.md): the
// same kernel always prints the same text, which golden tests and kernel
// cache keys rely on.
#pragma once

#include "ir/kernel/KernelIR.h"

#include <string>

namespace kiln::kir {

/// The whole kernel: a header with its parameters, then the body, two spaces
/// per nesting level, ending in "}\n". Variables and buffers are named in
/// order of first appearance; a name already taken by a different object gets
/// the first free suffix ".1", ".2", ...
std::string printKernel(const Kernel &kernel);

/// One statement tree, each line ending in '\n', starting at indentation 0.
std::string printStmt(const StmtPtr &stmt);

/// One expression on one line, without a trailing newline.
std::string printExpr(const ExprPtr &expr);

/// "f32", "f32x8", "boolx4".
std::string typeName(const Type &type);

/// "global", "local", "shared", "register".
std::string_view memScopeName(MemScope scope);

} // namespace kiln::kir
