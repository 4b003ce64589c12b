// Small queries and rewrites over kernel IR used by the printer, the passes and
// the tests: structural equality, variable uses, loads, stored buffers,
// substitution.
#pragma once

#include "ir/kernel/KernelIR.h"

#include <functional>
#include <vector>

namespace kiln::kir {

/// Whether two expressions compute the same thing by structure: same kinds,
/// types, operators and constants (floats compared bit for bit), and the same
/// Var and Buffer objects.
bool exprEqual(const ExprPtr &a, const ExprPtr &b);

/// Whether `expr` (or `stmt`, anywhere inside it) refers to `var`.
bool usesVar(const ExprPtr &expr, const Var *var);
bool usesVar(const StmtPtr &stmt, const Var *var);

/// Whether `expr` contains a Load.
bool containsLoad(const ExprPtr &expr);

/// Calls `fn` on every expression a statement tree holds directly (loop
/// bounds, let values, conditions, store indices, values and predicates), in
/// program order. Subexpressions are not visited separately.
void forEachExpr(const StmtPtr &stmt, const std::function<void(const ExprPtr &)> &fn);

/// Every Load in `expr` / in `stmt`, in program order (repeats kept).
std::vector<const Load *> collectLoads(const ExprPtr &expr);
std::vector<const Load *> collectLoads(const StmtPtr &stmt);

/// The buffers `stmt` stores to, each once, in order of first store.
std::vector<const Buffer *> storedBuffers(const StmtPtr &stmt);
/// The buffers a target instruction writes (its signature's Out operands).
std::vector<const Buffer *> writtenBuffers(const TargetInstr &instr);
/// Whether `stmt` contains a Barrier or a wait (GPU backends keep such loops rolled).
bool containsBarrier(const StmtPtr &stmt);
/// The oldest GPU architecture (sm x 10 + minor, e.g. 89) whose instructions cover `stmt`'s
/// target instructions (TargetInstrs.def's minSm; an Mma's product may need more,
/// MmaShapeInfo::minSm); 0 for none.
int minimumSm(const StmtPtr &stmt);

/// How many low bits of an integer expression are known to be zero (at most 62): 3 says the
/// value is a multiple of 8 whatever its variables hold. Constants give their own; a sum, a
/// difference, a min, a max or a choice the fewest of its operands'; a product the sum of its
/// operands'; a variable its let value's (`letValue` returns it, or null where unknown) or
/// none. Exact under two's-complement wrapping, so no range is needed.
int knownTrailingZeros(const ExprPtr &expr,
                       const std::function<ExprPtr(const Var &)> &letValue = nullptr);

/// `expr` / `stmt` with every reference to `var` replaced by `replacement`
/// (which must have the variable's type). Untouched subtrees stay shared.
ExprPtr substitute(const ExprPtr &expr, const Var *var, const ExprPtr &replacement);
StmtPtr substitute(const StmtPtr &stmt, const Var *var, const ExprPtr &replacement);

} // namespace kiln::kir
