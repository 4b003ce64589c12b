// Kind dispatch and the recursive defaults of ExprVisitor, StmtVisitor and
// Mutator, plus the non-folding node rebuilders the Mutator uses.
#include "ir/kernel/Visitor.h"

#include "ir/kernel/TargetInstr.h"

#include "support/Error.h"

#include <fmt/format.h>

namespace kiln::kir {

namespace {

template <typename T> std::shared_ptr<const T> downcast(const ExprPtr &e) {
  return std::static_pointer_cast<const T>(e);
}
template <typename T> std::shared_ptr<const T> downcast(const StmtPtr &s) {
  return std::static_pointer_cast<const T>(s);
}

} // namespace

// ---- ExprVisitor --------------------------------------------------------------------------------

void ExprVisitor::visit(const ExprPtr &expr) {
  if (!expr)
    return;
  switch (expr->kind()) {
#define KILN_KIR_EXPR(Class, name)                                                                 \
  case ExprKind::Class: return visit##Class(static_cast<const Class &>(*expr));
#include "ir/kernel/Nodes.def"
  }
  KILN_UNREACHABLE("expression kind");
}

void ExprVisitor::visitIntImm(const IntImm &) {}
void ExprVisitor::visitFloatImm(const FloatImm &) {}
void ExprVisitor::visitVarRef(const VarRef &) {}
void ExprVisitor::visitUnary(const Unary &node) { visit(node.operand); }

void ExprVisitor::visitBinary(const Binary &node) {
  visit(node.lhs);
  visit(node.rhs);
}

void ExprVisitor::visitSelect(const Select &node) {
  visit(node.cond);
  visit(node.onTrue);
  visit(node.onFalse);
}

void ExprVisitor::visitCast(const Cast &node) { visit(node.value); }

void ExprVisitor::visitLoad(const Load &node) {
  visit(node.index);
  visit(node.predicate);
}

void ExprVisitor::visitCall(const Call &node) {
  for (const auto &arg : node.args)
    visit(arg);
}

void ExprVisitor::visitBroadcast(const Broadcast &node) { visit(node.value); }

void ExprVisitor::visitShuffle(const Shuffle &node) {
  visit(node.value);
  visit(node.lane);
}

// ---- StmtVisitor --------------------------------------------------------------------------------

void StmtVisitor::visit(const StmtPtr &stmt) {
  if (!stmt)
    return;
  switch (stmt->kind()) {
#define KILN_KIR_STMT(Class, name, gpuOnly)                                                        \
  case StmtKind::Class: return visit##Class(static_cast<const Class &>(*stmt));
#include "ir/kernel/Nodes.def"
  }
  KILN_UNREACHABLE("statement kind");
}

void StmtVisitor::visitBlock(const Block &node) {
  for (const auto &stmt : node.stmts)
    visit(stmt);
}

void StmtVisitor::visitFor(const For &node) {
  visitExpr(node.begin);
  visitExpr(node.extent);
  visit(node.body);
}

void StmtVisitor::visitLet(const Let &node) {
  visitExpr(node.value);
  visit(node.body);
}

void StmtVisitor::visitIf(const If &node) {
  visitExpr(node.cond);
  visit(node.thenBody);
  visit(node.elseBody);
}

void StmtVisitor::visitAllocate(const Allocate &node) { visit(node.body); }

// Statements that hold no expressions and no statements.
void StmtVisitor::visitBarrier(const Barrier &) {}

void StmtVisitor::visitTargetInstr(const TargetInstr &node) {
  for (const TargetOperand &operand : node.operands)
    forEachExpr(operand, [&](const ExprPtr &e) { visitExpr(e); });
}

void StmtVisitor::visitStore(const Store &node) {
  visitExpr(node.index);
  visitExpr(node.value);
  if (node.predicate)
    visitExpr(node.predicate);
}

void StmtVisitor::visitEvaluate(const Evaluate &node) { visitExpr(node.value); }

void StmtVisitor::visitAtomic(const Atomic &node) {
  visitExpr(node.index);
  visitExpr(node.value);
}


// ---- Rebuilders ---------------------------------------------------------------------------------

ExprPtr rebuildUnary(const Unary &node, ExprPtr operand) {
  return std::make_shared<Unary>(node.op, std::move(operand));
}

ExprPtr rebuildBinary(const Binary &node, ExprPtr lhs, ExprPtr rhs) {
  Type type = isComparison(node.op) ? Type{DType::Bool, lhs->type().lanes} : lhs->type();
  return std::make_shared<Binary>(node.op, std::move(lhs), std::move(rhs), type);
}

ExprPtr rebuildSelect(ExprPtr cond, ExprPtr onTrue, ExprPtr onFalse) {
  return std::make_shared<Select>(std::move(cond), std::move(onTrue), std::move(onFalse));
}

ExprPtr rebuildCast(const Cast &node, ExprPtr value) {
  Type type{node.type().dtype, value->type().lanes};
  return std::make_shared<Cast>(std::move(value), type);
}

ExprPtr rebuildLoad(const Load &node, ExprPtr index, ExprPtr predicate) {
  return std::make_shared<Load>(node.buffer, std::move(index), node.type().lanes,
                                std::move(predicate));
}

ExprPtr rebuildCall(const Call &node, std::vector<ExprPtr> args) {
  KILN_CHECK(!args.empty(), "call: no arguments");
  Type type = args.front()->type();
  return std::make_shared<Call>(node.fn, std::move(args), type);
}

StmtPtr emptyStmt() { return std::make_shared<Block>(std::vector<StmtPtr>{}); }

bool isEmptyStmt(const StmtPtr &stmt) {
  if (!stmt)
    return true;
  auto block = as<Block>(*stmt);
  return block && block->stmts.empty();
}

// ---- Mutator ------------------------------------------------------------------------------------

ExprPtr Mutator::mutate(const ExprPtr &expr) {
  if (!expr)
    return nullptr;
  switch (expr->kind()) {
#define KILN_KIR_EXPR(Class, name)                                                                 \
  case ExprKind::Class: return mutate##Class(downcast<Class>(expr));
#include "ir/kernel/Nodes.def"
  }
  KILN_UNREACHABLE("expression kind");
}

StmtPtr Mutator::mutate(const StmtPtr &stmt) {
  if (!stmt)
    return nullptr;
  switch (stmt->kind()) {
#define KILN_KIR_STMT(Class, name, gpuOnly)                                                        \
  case StmtKind::Class: return mutate##Class(downcast<Class>(stmt));
#include "ir/kernel/Nodes.def"
  }
  KILN_UNREACHABLE("statement kind");
}

StmtPtr Mutator::mutateBody(const StmtPtr &body) {
  StmtPtr result = mutate(body);
  return result ? result : emptyStmt();
}

// Leaves: nothing inside them to mutate.
ExprPtr Mutator::mutateIntImm(const std::shared_ptr<const IntImm> &node) { return node; }
ExprPtr Mutator::mutateFloatImm(const std::shared_ptr<const FloatImm> &node) { return node; }
ExprPtr Mutator::mutateVarRef(const std::shared_ptr<const VarRef> &node) { return node; }
StmtPtr Mutator::mutateBarrier(const std::shared_ptr<const Barrier> &node) { return node; }

ExprPtr Mutator::mutateUnary(const std::shared_ptr<const Unary> &node) {
  ExprPtr operand = mutate(node->operand);
  if (operand == node->operand)
    return node;
  return rebuildUnary(*node, std::move(operand));
}

ExprPtr Mutator::mutateBinary(const std::shared_ptr<const Binary> &node) {
  ExprPtr lhs = mutate(node->lhs);
  ExprPtr rhs = mutate(node->rhs);
  if (lhs == node->lhs && rhs == node->rhs)
    return node;
  return rebuildBinary(*node, std::move(lhs), std::move(rhs));
}

ExprPtr Mutator::mutateSelect(const std::shared_ptr<const Select> &node) {
  ExprPtr cond = mutate(node->cond);
  ExprPtr onTrue = mutate(node->onTrue);
  ExprPtr onFalse = mutate(node->onFalse);
  if (cond == node->cond && onTrue == node->onTrue && onFalse == node->onFalse)
    return node;
  return rebuildSelect(std::move(cond), std::move(onTrue), std::move(onFalse));
}

ExprPtr Mutator::mutateCast(const std::shared_ptr<const Cast> &node) {
  ExprPtr value = mutate(node->value);
  if (value == node->value)
    return node;
  return rebuildCast(*node, std::move(value));
}

ExprPtr Mutator::mutateLoad(const std::shared_ptr<const Load> &node) {
  ExprPtr index = mutate(node->index);
  ExprPtr predicate = mutate(node->predicate);
  if (index == node->index && predicate == node->predicate)
    return node;
  return rebuildLoad(*node, std::move(index), std::move(predicate));
}

ExprPtr Mutator::mutateCall(const std::shared_ptr<const Call> &node) {
  std::vector<ExprPtr> args;
  args.reserve(node->args.size());
  bool changed = false;
  for (const auto &arg : node->args) {
    args.push_back(mutate(arg));
    changed |= args.back() != arg;
  }
  if (!changed)
    return node;
  return rebuildCall(*node, std::move(args));
}

ExprPtr Mutator::mutateBroadcast(const std::shared_ptr<const Broadcast> &node) {
  ExprPtr value = mutate(node->value);
  if (value == node->value)
    return node;
  return std::make_shared<Broadcast>(std::move(value), node->type().lanes);
}

ExprPtr Mutator::mutateShuffle(const std::shared_ptr<const Shuffle> &node) {
  ExprPtr value = mutate(node->value);
  ExprPtr lane = mutate(node->lane);
  if (value == node->value && lane == node->lane)
    return node;
  return std::make_shared<Shuffle>(node->mode, std::move(value), std::move(lane));
}

StmtPtr Mutator::mutateBlock(const std::shared_ptr<const Block> &node) {
  std::vector<StmtPtr> stmts;
  stmts.reserve(node->stmts.size());
  bool changed = false;
  for (const auto &stmt : node->stmts) {
    StmtPtr result = mutate(stmt);
    changed |= result != stmt;
    if (result)
      stmts.push_back(std::move(result));
  }
  if (!changed)
    return node;
  return std::make_shared<Block>(std::move(stmts));
}

StmtPtr Mutator::mutateFor(const std::shared_ptr<const For> &node) {
  ExprPtr begin = mutate(node->begin);
  ExprPtr extent = mutate(node->extent);
  StmtPtr body = mutateBody(node->body);
  if (begin == node->begin && extent == node->extent && body == node->body)
    return node;
  return std::make_shared<For>(node->var, std::move(begin), std::move(extent), node->loopKind,
                               std::move(body));
}

StmtPtr Mutator::mutateLet(const std::shared_ptr<const Let> &node) {
  ExprPtr value = mutate(node->value);
  StmtPtr body = mutateBody(node->body);
  if (value == node->value && body == node->body)
    return node;
  return std::make_shared<Let>(node->var, std::move(value), std::move(body));
}

StmtPtr Mutator::mutateIf(const std::shared_ptr<const If> &node) {
  ExprPtr cond = mutate(node->cond);
  StmtPtr thenBody = mutateBody(node->thenBody);
  StmtPtr elseBody = node->elseBody ? mutateBody(node->elseBody) : nullptr;
  if (cond == node->cond && thenBody == node->thenBody && elseBody == node->elseBody)
    return node;
  return std::make_shared<If>(std::move(cond), std::move(thenBody), std::move(elseBody));
}

StmtPtr Mutator::mutateAllocate(const std::shared_ptr<const Allocate> &node) {
  StmtPtr body = mutateBody(node->body);
  if (body == node->body)
    return node;
  return std::make_shared<Allocate>(node->buffer, std::move(body));
}

StmtPtr Mutator::mutateStore(const std::shared_ptr<const Store> &node) {
  ExprPtr index = mutate(node->index);
  ExprPtr value = mutate(node->value);
  ExprPtr predicate = mutate(node->predicate);
  if (index == node->index && value == node->value && predicate == node->predicate)
    return node;
  return std::make_shared<Store>(node->buffer, std::move(index), std::move(value),
                                 std::move(predicate));
}

StmtPtr Mutator::mutateEvaluate(const std::shared_ptr<const Evaluate> &node) {
  ExprPtr value = mutate(node->value);
  if (value == node->value)
    return node;
  return std::make_shared<Evaluate>(std::move(value));
}

StmtPtr Mutator::mutateAtomic(const std::shared_ptr<const Atomic> &node) {
  ExprPtr index = mutate(node->index);
  ExprPtr value = mutate(node->value);
  if (index == node->index && value == node->value)
    return node;
  return std::make_shared<Atomic>(node->op, node->buffer, std::move(index), std::move(value));
}

StmtPtr Mutator::mutateTargetInstr(const std::shared_ptr<const TargetInstr> &node) {
  std::vector<TargetOperand> operands;
  bool changed = false;
  for (const TargetOperand &operand : node->operands)
    operands.push_back(mapExprs(operand, [&](const ExprPtr &e) {
      ExprPtr result = mutate(e);
      changed = changed || result != e;
      return result;
    }));
  return changed ? std::make_shared<TargetInstr>(node->op, std::move(operands)) : node;
}

} // namespace kiln::kir
