// Traversals of kernel IR: ExprVisitor and StmtVisitor (read-only walks whose
// defaults recurse into children) and Mutator (rebuilds only what changed).
#pragma once

#include "ir/kernel/KernelIR.h"

#include <memory>

namespace kiln::kir {

/// A read-only walk over an expression tree. Each visitX recurses into the
/// node's children by default; override one to stop or to act on a kind.
class ExprVisitor {
public:
  virtual ~ExprVisitor() = default;

  /// Dispatches on the node's kind; a null expression is skipped.
  void visit(const ExprPtr &expr);

  virtual void visitIntImm(const IntImm &) {}
  virtual void visitFloatImm(const FloatImm &) {}
  virtual void visitVarRef(const VarRef &) {}
  virtual void visitUnary(const Unary &node);
  virtual void visitBinary(const Binary &node);
  virtual void visitSelect(const Select &node);
  virtual void visitCast(const Cast &node);
  virtual void visitLoad(const Load &node);
  virtual void visitCall(const Call &node);
  virtual void visitBroadcast(const Broadcast &node);
  virtual void visitShuffle(const Shuffle &node);
};

/// A read-only walk over a statement tree. Each visitX recurses into child
/// statements by default and hands every expression the statement holds
/// (bounds, values, indices, predicates, conditions) to visitExpr, which does
/// nothing unless overridden; IRVisitor overrides it to walk expressions too.
class StmtVisitor {
public:
  virtual ~StmtVisitor() = default;

  /// Dispatches on the node's kind; a null statement is skipped.
  void visit(const StmtPtr &stmt);

  virtual void visitBlock(const Block &node);
  virtual void visitFor(const For &node);
  virtual void visitLet(const Let &node);
  virtual void visitIf(const If &node);
  virtual void visitAllocate(const Allocate &node);
  virtual void visitStore(const Store &node);
  virtual void visitEvaluate(const Evaluate &node);
  virtual void visitBarrier(const Barrier &) {}
  virtual void visitAtomic(const Atomic &node);
  virtual void visitMma(const Mma &) {}
  virtual void visitLdMatrix(const LdMatrix &node);
  virtual void visitAsyncCopy(const AsyncCopy &node);
  virtual void visitAsyncCommit(const AsyncCommit &) {}
  virtual void visitAsyncWait(const AsyncWait &) {}
  virtual void visitWgmma(const Wgmma &node);
  virtual void visitWgmmaSync(const WgmmaSync &) {}
  virtual void visitMbarrier(const Mbarrier &node);
  virtual void visitTmaLoad(const TmaLoad &node);

  /// Called once for each expression directly held by a statement.
  virtual void visitExpr(const ExprPtr &) {}
};

/// Walks statements and every expression inside them: override the visitX of
/// either family. (Both `visit` overloads are reachable through this class.)
class IRVisitor : public StmtVisitor, public ExprVisitor {
public:
  using ExprVisitor::visit;
  using StmtVisitor::visit;
  void visitExpr(const ExprPtr &expr) override { ExprVisitor::visit(expr); }
};

/// Rewrites IR bottom-up. Each mutateX receives the node as a shared pointer
/// and returns its replacement; the defaults mutate the children and rebuild
/// the node only when a child changed, else return the same pointer, so
/// untouched subtrees stay shared with the input.
///
/// A statement mutator may return nullptr to delete a statement: a Block drops
/// it, and a For, Let, Allocate or If body that becomes null is replaced by an
/// empty Block (passes such as simplify then remove the empty construct).
class Mutator {
public:
  virtual ~Mutator() = default;

  /// Dispatches on the kind; null stays null.
  ExprPtr mutate(const ExprPtr &expr);
  StmtPtr mutate(const StmtPtr &stmt);

  virtual ExprPtr mutateIntImm(const std::shared_ptr<const IntImm> &node) { return node; }
  virtual ExprPtr mutateFloatImm(const std::shared_ptr<const FloatImm> &node) { return node; }
  virtual ExprPtr mutateVarRef(const std::shared_ptr<const VarRef> &node) { return node; }
  virtual ExprPtr mutateUnary(const std::shared_ptr<const Unary> &node);
  virtual ExprPtr mutateBinary(const std::shared_ptr<const Binary> &node);
  virtual ExprPtr mutateSelect(const std::shared_ptr<const Select> &node);
  virtual ExprPtr mutateCast(const std::shared_ptr<const Cast> &node);
  virtual ExprPtr mutateLoad(const std::shared_ptr<const Load> &node);
  virtual ExprPtr mutateCall(const std::shared_ptr<const Call> &node);
  virtual ExprPtr mutateBroadcast(const std::shared_ptr<const Broadcast> &node);
  virtual ExprPtr mutateShuffle(const std::shared_ptr<const Shuffle> &node);

  virtual StmtPtr mutateBlock(const std::shared_ptr<const Block> &node);
  virtual StmtPtr mutateFor(const std::shared_ptr<const For> &node);
  virtual StmtPtr mutateLet(const std::shared_ptr<const Let> &node);
  virtual StmtPtr mutateIf(const std::shared_ptr<const If> &node);
  virtual StmtPtr mutateAllocate(const std::shared_ptr<const Allocate> &node);
  virtual StmtPtr mutateStore(const std::shared_ptr<const Store> &node);
  virtual StmtPtr mutateEvaluate(const std::shared_ptr<const Evaluate> &node);
  virtual StmtPtr mutateBarrier(const std::shared_ptr<const Barrier> &node) { return node; }
  virtual StmtPtr mutateAtomic(const std::shared_ptr<const Atomic> &node);
  virtual StmtPtr mutateMma(const std::shared_ptr<const Mma> &node) { return node; }
  virtual StmtPtr mutateLdMatrix(const std::shared_ptr<const LdMatrix> &node);
  virtual StmtPtr mutateAsyncCopy(const std::shared_ptr<const AsyncCopy> &node);
  virtual StmtPtr mutateAsyncCommit(const std::shared_ptr<const AsyncCommit> &node) { return node; }
  virtual StmtPtr mutateAsyncWait(const std::shared_ptr<const AsyncWait> &node) { return node; }
  virtual StmtPtr mutateWgmma(const std::shared_ptr<const Wgmma> &node);
  virtual StmtPtr mutateWgmmaSync(const std::shared_ptr<const WgmmaSync> &node) { return node; }
  virtual StmtPtr mutateMbarrier(const std::shared_ptr<const Mbarrier> &node);
  virtual StmtPtr mutateTmaLoad(const std::shared_ptr<const TmaLoad> &node);

protected:
  /// mutate(stmt), with a null result turned into an empty Block (for bodies).
  StmtPtr mutateBody(const StmtPtr &body);
};

/// Rebuilders shared by the Mutator and the passes: a node of the same kind
/// with new children, its type recomputed from them (a Cast keeps its target
/// dtype). They check that operand types agree (a mismatch is a compiler bug)
/// and, unlike the Builder functions, never fold.
ExprPtr rebuildUnary(const Unary &node, ExprPtr operand);
ExprPtr rebuildBinary(const Binary &node, ExprPtr lhs, ExprPtr rhs);
ExprPtr rebuildSelect(ExprPtr cond, ExprPtr onTrue, ExprPtr onFalse);
ExprPtr rebuildCast(const Cast &node, ExprPtr value);
ExprPtr rebuildLoad(const Load &node, ExprPtr index, ExprPtr predicate);
ExprPtr rebuildCall(const Call &node, std::vector<ExprPtr> args);

/// An empty Block: the statement that does nothing.
StmtPtr emptyStmt();
/// Whether `stmt` is null or a Block with no statements.
bool isEmptyStmt(const StmtPtr &stmt);

} // namespace kiln::kir
