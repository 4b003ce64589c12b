// What the verifier's messages print: a statement's first line, and whether a statement's
// operands are all present so that printing it cannot fail.
#include "ir/kernel/VerifierSummary.h"

#include "ir/kernel/Printer.h"
#include "ir/kernel/VerifierGpuStatements.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::kir {

namespace {

bool present(const Fragment &f) { return f.buffer != nullptr; }

} // namespace

std::string_view statementKindName(StmtKind kind) {
  switch (kind) {
  case StmtKind::Block: return "block";
  case StmtKind::For: return "for";
  case StmtKind::Let: return "let";
  case StmtKind::If: return "if";
  case StmtKind::Allocate: return "alloc";
  case StmtKind::Store: return "store";
  case StmtKind::Evaluate: return "eval";
  default: return gpuStatementName(kind);
  }
}

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
  case StmtKind::Barrier:
  case StmtKind::AsyncCommit:
  case StmtKind::AsyncWait:
  case StmtKind::WgmmaSync: return true;
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
  case StmtKind::Mma: {
    auto &m = static_cast<const Mma &>(s);
    return present(m.d) && present(m.a) && present(m.b) && present(m.c);
  }
  case StmtKind::LdMatrix: {
    auto &l = static_cast<const LdMatrix &>(s);
    return present(l.destination) && l.source && hasAllOperands(l.rowIndex);
  }
  case StmtKind::AsyncCopy: {
    auto &c = static_cast<const AsyncCopy &>(s);
    return c.destination && c.source && hasAllOperands(c.destinationIndex) &&
           hasAllOperands(c.sourceIndex) && optional(c.predicate);
  }
  case StmtKind::Wgmma: {
    auto &w = static_cast<const Wgmma &>(s);
    return present(w.d) && w.a.buffer && w.b.buffer && hasAllOperands(w.a.start) &&
           hasAllOperands(w.b.start);
  }
  case StmtKind::Mbarrier: {
    auto &m = static_cast<const Mbarrier &>(s);
    return m.barriers && hasAllOperands(m.index) && optional(m.parity);
  }
  case StmtKind::TmaLoad: {
    auto &t = static_cast<const TmaLoad &>(s);
    return t.map && t.map->global && t.destination && t.barriers &&
           hasAllOperands(t.destinationIndex) && hasAllOperands(t.barrierIndex) &&
           std::ranges::all_of(t.coords, [](const ExprPtr &c) { return hasAllOperands(c); });
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
