// The target instructions' signatures (from ir/kernel/TargetInstrs.def) and the walks over
// their operands that printing, parsing, rebuilding, uses/defs and verifying share.
#pragma once

#include "ir/kernel/KernelIR.h"

#include <functional>
#include <span>
#include <string_view>

namespace kiln::kir {

/// One role of an op's signature.
struct OperandSpec {
  std::string_view role; ///< the view's field name, and the printed form's role
  OperandKind kind = OperandKind::Int;
  bool written = false; ///< the buffer the op writes (uses/defs, Hoist)
};

/// An op's row of TargetInstrs.def.
struct TargetInstrInfo {
  std::string_view name; ///< the printed keyword
  std::string_view what; ///< its name in messages ("an mma")
  int minSm = 0;
  bool orders = false;
  std::span<const OperandSpec> operands;
};

const TargetInstrInfo &targetInstrInfo(TargetOp op);
/// The op whose keyword is `name`, or nullopt.
std::optional<TargetOp> targetOpNamed(std::string_view name);

/// Whether an operand of `kind` may be absent (a null expression).
bool isOptional(OperandKind kind);
/// How many values an enum kind has (0 for other kinds), and each value's printed name.
int64_t enumSize(OperandKind kind);
std::string_view enumName(OperandKind kind, int64_t value);
/// Whether `operand` holds the alternative `kind` stores.
bool holdsKind(const TargetOperand &operand, OperandKind kind);

/// The buffer an operand names (a fragment's, a shared matrix's, a tensor map's global), or
/// nullptr.
BufferPtr operandBuffer(const TargetOperand &operand);
/// Calls fn on every expression `operand` holds (a shared matrix's start, each of a list);
/// an absent optional one is skipped.
void forEachExpr(const TargetOperand &operand, const std::function<void(const ExprPtr &)> &fn);
/// `operand` with each expression it holds replaced by fn(expression).
TargetOperand mapExprs(const TargetOperand &operand,
                       const std::function<ExprPtr(const ExprPtr &)> &fn);

} // namespace kiln::kir
