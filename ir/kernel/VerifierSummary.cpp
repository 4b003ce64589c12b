// What the verifier's messages print: a statement's first line, and whether a statement's
// operands are all present so that printing it cannot fail.
#include "ir/kernel/VerifierSummary.h"

#include "ir/kernel/Printer.h"
#include "ir/kernel/TargetInstr.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::kir {

std::string_view statementKindName(StmtKind kind) { return kindName(kind); }

/// Whether `e` and every operand below it are present (so that it can be printed).
bool hasAllOperands(const ExprPtr &e) {
  if (!e)
    return false;
  switch (e->kind()) {
  case ExprKind::IntImm:
  case ExprKind::FloatImm: return true;
  case ExprKind::VarRef: return static_cast<const VarRef &>(*e).var != nullptr;
  case ExprKind::Unary: return hasAllOperands(static_cast<const Unary &>(*e).operand);
  case ExprKind::Binary: {
    auto &b = static_cast<const Binary &>(*e);
    return hasAllOperands(b.lhs) && hasAllOperands(b.rhs);
  }
  case ExprKind::Select: {
    auto &s = static_cast<const Select &>(*e);
    return hasAllOperands(s.cond) && hasAllOperands(s.onTrue) && hasAllOperands(s.onFalse);
  }
  case ExprKind::Cast: return hasAllOperands(static_cast<const Cast &>(*e).value);
  case ExprKind::Load: {
    auto &l = static_cast<const Load &>(*e);
    return l.buffer && hasAllOperands(l.index) && (!l.predicate || hasAllOperands(l.predicate));
  }
  case ExprKind::Call:
    return std::ranges::all_of(static_cast<const Call &>(*e).args,
                               [](const ExprPtr &arg) { return hasAllOperands(arg); });
  case ExprKind::Broadcast: return hasAllOperands(static_cast<const Broadcast &>(*e).value);
  case ExprKind::Shuffle: {
    auto &s = static_cast<const Shuffle &>(*e);
    return hasAllOperands(s.value) && hasAllOperands(s.lane);
  }
  }
  return false;
}

/// Whether every operand a statement needs is present, so that it can be printed. Bodies may
/// be empty (null); predicates and an if's else branch are optional.
bool hasAllOperands(const Stmt &s) {
  auto optional = [](const ExprPtr &e) { return !e || hasAllOperands(e); };
  switch (s.kind()) {
  case StmtKind::Block:
  case StmtKind::Barrier: return true;
  case StmtKind::For: {
    auto &f = static_cast<const For &>(s);
    return f.var && hasAllOperands(f.begin) && hasAllOperands(f.extent);
  }
  case StmtKind::Let: {
    auto &l = static_cast<const Let &>(s);
    return l.var && hasAllOperands(l.value);
  }
  case StmtKind::If: return hasAllOperands(static_cast<const If &>(s).cond);
  case StmtKind::Allocate: return static_cast<const Allocate &>(s).buffer != nullptr;
  case StmtKind::Store: {
    auto &st = static_cast<const Store &>(s);
    return st.buffer && hasAllOperands(st.index) && hasAllOperands(st.value) &&
           optional(st.predicate);
  }
  case StmtKind::Evaluate: return hasAllOperands(static_cast<const Evaluate &>(s).value);
  case StmtKind::Atomic: {
    auto &a = static_cast<const Atomic &>(s);
    return a.buffer && hasAllOperands(a.index) && hasAllOperands(a.value);
  }
  case StmtKind::TargetInstr: {
    auto &instr = static_cast<const TargetInstr &>(s);
    const TargetInstrInfo &info = targetInstrInfo(instr.op);
    bool present = instr.operands.size() == info.operands.size();
    for (size_t i = 0; present && i < info.operands.size(); ++i) {
      OperandKind kind = info.operands[i].kind;
      const TargetOperand &operand = instr.operands[i];
      bool names = kind >= OperandKind::Buffer && kind <= OperandKind::TensorMap;
      present = (!names || operandBuffer(operand)) &&
                (kind != OperandKind::Index || std::get<ExprPtr>(operand));
      forEachExpr(operand, [&](const ExprPtr &e) { present = present && hasAllOperands(e); });
    }
    return present;
  }
  }
  return false;
}

/// The first printed line of a (complete) statement, without its opening brace or body.
std::string statementSummary(const Stmt &stmt) {
  switch (stmt.kind()) {
  case StmtKind::Block: return "{ ... }";
  case StmtKind::For: {
    auto &loop = static_cast<const For &>(stmt);
    // The printer's [begin, end) with end = begin + extent, not folded.
    auto zero = as<IntImm>(*loop.begin);
    std::string end = zero && zero->value == 0
                          ? printExpr(loop.extent)
                          : fmt::format("{} + {}", printExpr(loop.begin), printExpr(loop.extent));
    return fmt::format("for {} in [{}, {}) {}", loop.var->name, printExpr(loop.begin), end,
                       forKindName(loop.loopKind));
  }
  case StmtKind::Let: {
    auto &let = static_cast<const Let &>(stmt);
    return fmt::format("let {}: {} = {}", let.var->name, typeName(let.var->type),
                       printExpr(let.value));
  }
  case StmtKind::If: return fmt::format("if {}", printExpr(static_cast<const If &>(stmt).cond));
  case StmtKind::Allocate: {
    const Buffer &b = *static_cast<const Allocate &>(stmt).buffer;
    return fmt::format("alloc {}: {}[{}] {}", b.name, dtypeName(b.dtype), b.size,
                       memScopeName(b.scope));
  }
  default: {
    // A leaf: printStmt takes shared ownership, and a non-owning alias prints the same node.
    std::string text = printStmt(StmtPtr(std::shared_ptr<const Stmt>(), &stmt));
    return text.substr(0, text.find('\n'));
  }
  }
}

} // namespace kiln::kir
