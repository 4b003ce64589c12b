// Traversals of kernel IR: ExprVisitor and StmtVisitor (read-only walks whose
// defaults recurse into children) and Mutator (rebuilds only what changed).
#pragma once

#include "ir/kernel/KernelIR.h"

#include <memory>

namespace kiln::kir {

/// A read-only walk over an expression tree. Each visitX (one per kind of
/// ir/kernel/Nodes.def) recurses into the node's children by default; override
/// one to stop or to act on a kind.
class ExprVisitor {
public:
  virtual ~ExprVisitor() = default;

  /// Dispatches on the node's kind; a null expression is skipped.
  void visit(const ExprPtr &expr);

#define KILN_KIR_EXPR(Class, name) virtual void visit##Class(const Class &node);
#include "ir/kernel/Nodes.def"
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

#define KILN_KIR_STMT(Class, name, gpuOnly) virtual void visit##Class(const Class &node);
#include "ir/kernel/Nodes.def"

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

#define KILN_KIR_EXPR(Class, name)                                                                 \
  virtual ExprPtr mutate##Class(const std::shared_ptr<const Class> &node);
#define KILN_KIR_STMT(Class, name, gpuOnly)                                                        \
  virtual StmtPtr mutate##Class(const std::shared_ptr<const Class> &node);
#include "ir/kernel/Nodes.def"

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
