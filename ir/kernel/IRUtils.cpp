// Structural equality, variable-use and load queries, and substitution on
// kernel IR, built on the visitors.
#include "ir/kernel/IRUtils.h"

#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/TargetInstr.h"
#include "ir/kernel/Visitor.h"
#include "support/Error.h"

#include <algorithm>
#include <bit>

namespace kiln::kir {

bool exprEqual(const ExprPtr &a, const ExprPtr &b) {
  if (a == b)
    return true;
  if (!a || !b || a->kind() != b->kind() || a->type() != b->type())
    return false;
  switch (a->kind()) {
  case ExprKind::IntImm:
    return static_cast<const IntImm &>(*a).value == static_cast<const IntImm &>(*b).value;
  case ExprKind::FloatImm:
    return std::bit_cast<uint64_t>(static_cast<const FloatImm &>(*a).value) ==
           std::bit_cast<uint64_t>(static_cast<const FloatImm &>(*b).value);
  case ExprKind::VarRef:
    return static_cast<const VarRef &>(*a).var == static_cast<const VarRef &>(*b).var;
  case ExprKind::Unary: {
    auto &x = static_cast<const Unary &>(*a);
    auto &y = static_cast<const Unary &>(*b);
    return x.op == y.op && exprEqual(x.operand, y.operand);
  }
  case ExprKind::Binary: {
    auto &x = static_cast<const Binary &>(*a);
    auto &y = static_cast<const Binary &>(*b);
    return x.op == y.op && exprEqual(x.lhs, y.lhs) && exprEqual(x.rhs, y.rhs);
  }
  case ExprKind::Select: {
    auto &x = static_cast<const Select &>(*a);
    auto &y = static_cast<const Select &>(*b);
    return exprEqual(x.cond, y.cond) && exprEqual(x.onTrue, y.onTrue) &&
           exprEqual(x.onFalse, y.onFalse);
  }
  case ExprKind::Cast:
    return exprEqual(static_cast<const Cast &>(*a).value, static_cast<const Cast &>(*b).value);
  case ExprKind::Load: {
    auto &x = static_cast<const Load &>(*a);
    auto &y = static_cast<const Load &>(*b);
    return x.buffer == y.buffer && exprEqual(x.index, y.index) &&
           exprEqual(x.predicate, y.predicate);
  }
  case ExprKind::Call: {
    auto &x = static_cast<const Call &>(*a);
    auto &y = static_cast<const Call &>(*b);
    return x.fn == y.fn && std::ranges::equal(x.args, y.args, exprEqual);
  }
  case ExprKind::Broadcast:
    return exprEqual(static_cast<const Broadcast &>(*a).value,
                     static_cast<const Broadcast &>(*b).value);
  case ExprKind::Shuffle: {
    auto &x = static_cast<const Shuffle &>(*a);
    auto &y = static_cast<const Shuffle &>(*b);
    return x.mode == y.mode && exprEqual(x.value, y.value) && exprEqual(x.lane, y.lane);
  }
  }
  KILN_UNREACHABLE("expression kind");
}

namespace {

class VarUseFinder : public IRVisitor {
public:
  explicit VarUseFinder(const Var *var) : var_(var) {}
  bool found = false;

  void visitVarRef(const VarRef &node) override { found |= node.var.get() == var_; }

private:
  const Var *var_;
};

class LoadCollector : public IRVisitor {
public:
  std::vector<const Load *> loads;
  void visitLoad(const Load &node) override {
    loads.push_back(&node);
    IRVisitor::visitLoad(node);
  }
};

class StoreCollector : public StmtVisitor {
public:
  std::vector<const Buffer *> buffers;
  void visitStore(const Store &node) override { add(node.buffer.get()); }
  void visitAtomic(const Atomic &node) override { add(node.buffer.get()); }
  void visitTargetInstr(const TargetInstr &node) override {
    for (const Buffer *buffer : writtenBuffers(node))
      add(buffer);
  }

private:
  void add(const Buffer *buffer) {
    if (std::ranges::find(buffers, buffer) == buffers.end())
      buffers.push_back(buffer);
  }
};

class ExprCallback : public StmtVisitor {
public:
  explicit ExprCallback(const std::function<void(const ExprPtr &)> &fn) : fn_(fn) {}
  void visitExpr(const ExprPtr &expr) override { fn_(expr); }

private:
  const std::function<void(const ExprPtr &)> &fn_;
};

class Substituter : public Mutator {
public:
  Substituter(const Var *var, ExprPtr replacement)
      : var_(var), replacement_(std::move(replacement)) {}

  ExprPtr mutateVarRef(const std::shared_ptr<const VarRef> &node) override {
    return node->var.get() == var_ ? replacement_ : node;
  }

private:
  const Var *var_;
  ExprPtr replacement_;
};

} // namespace

bool usesVar(const ExprPtr &expr, const Var *var) {
  VarUseFinder finder(var);
  finder.ExprVisitor::visit(expr);
  return finder.found;
}

bool usesVar(const StmtPtr &stmt, const Var *var) {
  VarUseFinder finder(var);
  finder.StmtVisitor::visit(stmt);
  return finder.found;
}

bool containsLoad(const ExprPtr &expr) { return !collectLoads(expr).empty(); }

void forEachExpr(const StmtPtr &stmt, const std::function<void(const ExprPtr &)> &fn) {
  ExprCallback callback(fn);
  callback.visit(stmt);
}

std::vector<const Load *> collectLoads(const ExprPtr &expr) {
  LoadCollector collector;
  collector.ExprVisitor::visit(expr);
  return std::move(collector.loads);
}

std::vector<const Load *> collectLoads(const StmtPtr &stmt) {
  LoadCollector collector;
  collector.StmtVisitor::visit(stmt);
  return std::move(collector.loads);
}

std::vector<const Buffer *> storedBuffers(const StmtPtr &stmt) {
  StoreCollector collector;
  collector.visit(stmt);
  return std::move(collector.buffers);
}

std::vector<const Buffer *> writtenBuffers(const TargetInstr &instr) {
  std::vector<const Buffer *> buffers;
  const TargetInstrInfo &info = targetInstrInfo(instr.op);
  for (size_t i = 0; i < info.operands.size(); ++i)
    if (info.operands[i].written)
      buffers.push_back(operandBuffer(instr.operands[i]).get());
  return buffers;
}

bool containsBarrier(const StmtPtr &stmt) {
  struct Finder : StmtVisitor {
    bool found = false;
    void visitBarrier(const Barrier &) override { found = true; }
    // Waits order other threads' async copies too.
    void visitTargetInstr(const TargetInstr &node) override {
      found = found || targetInstrInfo(node.op).orders;
    }
  } finder;
  finder.visit(stmt);
  return finder.found;
}

int minimumSm(const StmtPtr &stmt) {
  struct Finder : StmtVisitor {
    int sm = 0;
    void visitTargetInstr(const TargetInstr &node) override {
      sm = std::max(sm, targetInstrInfo(node.op).minSm);
      if (node.op == TargetOp::Mma)
        sm = std::max(sm, mmaShapeInfo(node.view<Mma>().mmaKind).minSm);
    }
  } finder;
  finder.visit(stmt);
  return finder.sm;
}

int knownTrailingZeros(const ExprPtr &expr, const std::function<ExprPtr(const Var &)> &letValue) {
  constexpr int kMost = 62;
  const Type type = expr->type();
  if (type.lanes != 1 || (type.dtype != DType::I64 && type.dtype != DType::I32))
    return 0;
  auto zeros = [&](const ExprPtr &e) { return knownTrailingZeros(e, letValue); };
  switch (expr->kind()) {
  case ExprKind::IntImm: {
    auto value = static_cast<uint64_t>(static_cast<const IntImm &>(*expr).value);
    return value == 0 ? kMost : std::min(kMost, std::countr_zero(value));
  }
  case ExprKind::VarRef: {
    const Var &var = *static_cast<const VarRef &>(*expr).var;
    ExprPtr value = letValue ? letValue(var) : nullptr;
    return value ? zeros(value) : 0;
  }
  case ExprKind::Unary: {
    const auto &unary = static_cast<const Unary &>(*expr);
    return unary.op == UnaryOp::Neg ? zeros(unary.operand) : 0;
  }
  case ExprKind::Select: {
    const auto &select = static_cast<const Select &>(*expr);
    return std::min(zeros(select.onTrue), zeros(select.onFalse));
  }
  case ExprKind::Cast: {
    // Between i32 and i64 the low 31 bits carry over (a sign extension or a truncation).
    const ExprPtr &value = static_cast<const Cast &>(*expr).value;
    DType from = value->type().dtype;
    if (from != DType::I64 && from != DType::I32)
      return 0;
    return std::min(zeros(value), 31);
  }
  case ExprKind::Binary: {
    const auto &binary = static_cast<const Binary &>(*expr);
    switch (binary.op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Min:
    case BinaryOp::Max:
    case BinaryOp::Mod: // x - c * q: what divides x and c divides it
      return std::min(zeros(binary.lhs), zeros(binary.rhs));
    case BinaryOp::Mul: return std::min(kMost, zeros(binary.lhs) + zeros(binary.rhs));
    default: return 0;
    }
  }
  default: return 0;
  }
}

ExprPtr substitute(const ExprPtr &expr, const Var *var, const ExprPtr &replacement) {
  KILN_CHECK(replacement->type() == var->type, "substitute: replacement type differs");
  Substituter substituter(var, replacement);
  return substituter.mutate(expr);
}

StmtPtr substitute(const StmtPtr &stmt, const Var *var, const ExprPtr &replacement) {
  KILN_CHECK(replacement->type() == var->type, "substitute: replacement type differs");
  Substituter substituter(var, replacement);
  return substituter.mutate(stmt);
}

} // namespace kiln::kir
