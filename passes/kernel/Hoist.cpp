// hoist: loop-invariant code motion on kernel IR. Lowered loop nests recompute
// row offsets (i * ld) and loop-independent lets in every inner iteration;
// this pass computes them once before the loop, innermost loops first, so an
// invariant climbs as far out as its operands allow.
#include "passes/kernel/Passes.h"

#include "ir/kernel/Builder.h"
#include "ir/kernel/IRUtils.h"
#include "ir/kernel/TargetInstr.h"
#include "ir/kernel/Visitor.h"

#include <unordered_map>
#include <unordered_set>

namespace kiln::kir {

namespace {

bool isHostLoop(ForKind kind) {
  return kind == ForKind::Serial || kind == ForKind::Unrolled || kind == ForKind::Vectorized ||
         kind == ForKind::Parallel;
}

bool isPositiveConstant(const ExprPtr &e) {
  auto imm = as<IntImm>(*e);
  return imm && !e->type().isVector() && imm->value > 0;
}

/// Whether evaluating `e` can fault: only a load can (out of bounds when the
/// loop that guarded it does not run); integer division is total in kernel IR.
bool mayFault(const ExprPtr &e) { return containsLoad(e); }

/// Whether `e` contains a multiply, a divide or a modulo (worth a register).
bool isExpensive(const ExprPtr &e) {
  struct Finder : ExprVisitor {
    bool found = false;
    void visitBinary(const Binary &node) override {
      found |= node.op == BinaryOp::Mul || node.op == BinaryOp::Div || node.op == BinaryOp::Mod;
      ExprVisitor::visitBinary(node);
    }
  } finder;
  finder.visit(e);
  return finder.found;
}

/// What the loop body binds, allocates and writes: everything a value must
/// not depend on to be invariant.
struct LoopFacts : StmtVisitor {
  const Var *loopVar = nullptr;
  std::unordered_map<const Var *, int> bindings; ///< vars bound in the body, with counts
  std::unordered_set<const Buffer *> written;    ///< stored or allocated in the body
  bool hasEffects = false;                       ///< an Evaluate: may write anything
  bool runsAtLeastOnce = false;
  std::unordered_set<const Var *> hoisted;

  void visitFor(const For &node) override {
    ++bindings[node.var.get()];
    StmtVisitor::visitFor(node);
  }
  void visitLet(const Let &node) override {
    ++bindings[node.var.get()];
    StmtVisitor::visitLet(node);
  }
  void visitAllocate(const Allocate &node) override {
    written.insert(node.buffer.get());
    StmtVisitor::visitAllocate(node);
  }
  void visitStore(const Store &node) override { written.insert(node.buffer.get()); }
  void visitAtomic(const Atomic &node) override { written.insert(node.buffer.get()); }
  // A wait orders others' writes, and a bulk copy lands, at no point of the loop a hoist
  // could see.
  void visitTargetInstr(const TargetInstr &node) override {
    for (const Buffer *buffer : writtenBuffers(node))
      written.insert(buffer);
    hasEffects = hasEffects || targetInstrInfo(node.op).orders || node.op == TargetOp::TmaLoad;
  }
  void visitEvaluate(const Evaluate &) override { hasEffects = true; }
  // A barrier orders other threads' writes before later reads: nothing loaded
  // may move across it.
  void visitBarrier(const Barrier &) override { hasEffects = true; }

  bool isVariant(const Var *var) const {
    return var == loopVar || (bindings.contains(var) && !hoisted.contains(var));
  }

  /// No reference to a variant variable, and loads only of buffers the loop
  /// never writes (`allowLoads` false: no loads at all).
  bool isInvariant(const ExprPtr &e, bool allowLoads) const {
    struct Checker : ExprVisitor {
      const LoopFacts &facts;
      bool allowLoads;
      bool invariant = true;
      Checker(const LoopFacts &f, bool loads) : facts(f), allowLoads(loads) {}
      void visitVarRef(const VarRef &node) override {
        invariant &= !facts.isVariant(node.var.get());
      }
      void visitLoad(const Load &node) override {
        invariant &= allowLoads && !facts.hasEffects && !facts.written.contains(node.buffer.get());
        ExprVisitor::visitLoad(node);
      }
      // A shuffle is a collective of the warp: moving it changes which
      // threads take part.
      void visitShuffle(const Shuffle &) override { invariant = false; }
    } checker(*this, allowLoads);
    checker.visit(e);
    return checker.invariant;
  }
};

using Binding = std::pair<VarPtr, ExprPtr>;

/// Takes invariant lets out of the statements that always run with the loop
/// body (through blocks, lets and allocations; not into ifs or inner loops,
/// whose lets the inner loop's own hoisting already moved up to here).
StmtPtr extractInvariantLets(const StmtPtr &stmt, LoopFacts &facts, std::vector<Binding> &out) {
  if (!stmt)
    return stmt;
  switch (stmt->kind()) {
  case StmtKind::Let: {
    auto &node = static_cast<const Let &>(*stmt);
    bool single = facts.bindings[node.var.get()] == 1;
    if (single && facts.isInvariant(node.value, true) &&
        (facts.runsAtLeastOnce || !mayFault(node.value))) {
      out.emplace_back(node.var, node.value);
      facts.hoisted.insert(node.var.get());
      return extractInvariantLets(node.body, facts, out);
    }
    StmtPtr body = extractInvariantLets(node.body, facts, out);
    return body == node.body ? stmt : std::make_shared<Let>(node.var, node.value, body);
  }
  case StmtKind::Block: {
    auto &node = static_cast<const Block &>(*stmt);
    std::vector<StmtPtr> stmts;
    bool changed = false;
    for (const auto &child : node.stmts) {
      stmts.push_back(extractInvariantLets(child, facts, out));
      changed |= stmts.back() != child;
    }
    return changed ? std::make_shared<Block>(std::move(stmts)) : stmt;
  }
  case StmtKind::Allocate: {
    auto &node = static_cast<const Allocate &>(*stmt);
    StmtPtr body = extractInvariantLets(node.body, facts, out);
    return body == node.body ? stmt : std::make_shared<Allocate>(node.buffer, body);
  }
  default: return stmt;
  }
}

/// Replaces maximal invariant integer subexpressions that contain a multiply,
/// divide or modulo with variables bound before the loop. Only arithmetic
/// without loads moves (it cannot fault), so it may come from under an if or
/// an inner loop.
class InvariantExpressionHoister : public Mutator {
public:
  InvariantExpressionHoister(const LoopFacts &facts, std::vector<Binding> &out)
      : facts_(facts), out_(out) {}

  ExprPtr mutateBinary(const std::shared_ptr<const Binary> &node) override {
    if (isCandidate(node))
      return kir::ref(variableFor(node));
    return Mutator::mutateBinary(node);
  }

private:
  const LoopFacts &facts_;
  std::vector<Binding> &out_;
  std::vector<Binding> created_;

  bool isCandidate(const ExprPtr &e) const {
    const Type &type = e->type();
    if (type.isVector() || !isInteger(type.dtype))
      return false;
    auto &node = static_cast<const Binary &>(*e);
    if (isComparison(node.op) || node.op == BinaryOp::And || node.op == BinaryOp::Or)
      return false;
    return isExpensive(e) && facts_.isInvariant(e, false) && usesAnyVar(e);
  }

  static bool usesAnyVar(const ExprPtr &e) {
    struct Finder : ExprVisitor {
      bool found = false;
      void visitVarRef(const VarRef &) override { found = true; }
    } finder;
    finder.visit(e);
    return finder.found;
  }

  VarPtr variableFor(const ExprPtr &e) {
    for (const auto &[var, value] : created_)
      if (exprEqual(value, e))
        return var;
    VarPtr var = makeVar("inv", e->type());
    created_.emplace_back(var, e);
    out_.emplace_back(var, e);
    return var;
  }
};

class Hoister : public Mutator {
public:
  StmtPtr mutateFor(const std::shared_ptr<const For> &node) override {
    StmtPtr body = mutateBody(node->body); // inner loops first
    if (!isHostLoop(node->loopKind))
      return body == node->body ? node
                                : std::make_shared<For>(node->var, node->begin, node->extent,
                                                        node->loopKind, body);
    LoopFacts facts;
    facts.loopVar = node->var.get();
    facts.runsAtLeastOnce = isPositiveConstant(node->extent);
    facts.visit(body);

    std::vector<Binding> hoisted;
    body = extractInvariantLets(body, facts, hoisted);
    InvariantExpressionHoister expressions(facts, hoisted);
    body = expressions.mutate(body);

    StmtPtr result = body == node->body ? node
                                        : std::make_shared<For>(node->var, node->begin,
                                                                node->extent, node->loopKind, body);
    for (auto it = hoisted.rbegin(); it != hoisted.rend(); ++it)
      result = std::make_shared<Let>(it->first, it->second, result);
    return result;
  }
};

} // namespace

StmtPtr hoistLoopInvariants(const StmtPtr &stmt) {
  if (!stmt)
    return stmt;
  return Hoister().mutate(stmt);
}

Kernel hoistLoopInvariants(Kernel kernel) {
  kernel.body = hoistLoopInvariants(kernel.body);
  return kernel;
}

} // namespace kiln::kir
