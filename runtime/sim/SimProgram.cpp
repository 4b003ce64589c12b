// Flattens a kernel the kernel-IR verifier has accepted into the simulator's node tables.
#include "runtime/sim/SimProgram.h"

#include "ir/kernel/Verifier.h"

#include <algorithm>
#include <unordered_map>

namespace kiln::sim {

namespace {

using namespace kiln::kir;

class ProgramCompiler {
public:
  explicit ProgramCompiler(const Kernel &kernel) : kernel_(kernel) {}

  /// `kernel_` has passed the verifier: every type, scope and GPU statement is as the IR's
  /// rules say, so compiling only lays the kernel out in tables.
  SimProgram compile() {
    for (size_t i = 0; i < kernel_.params.size(); ++i)
      program_.buffers[static_cast<size_t>(bufferIndex(*kernel_.params[i]))].param =
          static_cast<int>(i);
    if (kernel_.body)
      program_.root = compileStmt(kernel_.body, 0);
    return std::move(program_);
  }

private:
  const Kernel &kernel_;
  SimProgram program_;
  std::unordered_map<const Expr *, int> exprIndex_;
  std::unordered_map<const Var *, int> varIndex_;
  std::unordered_map<const Buffer *, int> bufferIndex_;
  int waits_ = 0; ///< mbarrier waits compiled so far

  int varIndex(const Var &var) {
    auto [it, inserted] = varIndex_.emplace(&var, static_cast<int>(program_.vars.size()));
    if (inserted) {
      program_.vars.push_back(SimVar{&var, var.type.lanes});
      program_.varOffsets.push_back(program_.totalVarLanes);
      program_.totalVarLanes += std::max(var.type.lanes, 1);
    }
    return it->second;
  }

  int bufferIndex(const Buffer &buffer) {
    auto [it, inserted] = bufferIndex_.emplace(&buffer, static_cast<int>(program_.buffers.size()));
    if (inserted)
      program_.buffers.push_back(SimBuffer{&buffer});
    return it->second;
  }

  const Type &typeOf(int node) const { return program_.exprs[static_cast<size_t>(node)].type; }

  SimFragment fragment(const Fragment &f) { return SimFragment{bufferIndex(*f.buffer), f.offset}; }

  int compileExpr(const ExprPtr &e) {
    if (auto it = exprIndex_.find(e.get()); it != exprIndex_.end())
      return it->second;
    SimExpr node = *flattenExpr(
        *e, [&](const ExprPtr &child) -> Expected<int> { return compileExpr(child); },
        [&](const Var &var) { return varIndex(var); },
        [&](const Buffer &buffer) { return bufferIndex(buffer); });
    // A variable reference reads the variable's own column: it needs no slot.
    if (node.kind != ExprKind::VarRef) {
      node.slot = program_.totalLanes;
      program_.totalLanes += node.type.lanes;
    }
    int index = static_cast<int>(program_.exprs.size());
    program_.exprs.push_back(node);
    exprIndex_.emplace(e.get(), index);
    return index;
  }

  int compileBody(const StmtPtr &s, int depth) { return s ? compileStmt(s, depth) : kNoNode; }

  int compileStmt(const StmtPtr &s, int depth) {
    program_.maxDepth = std::max(program_.maxDepth, depth);
    SimStmt node;
    node.kind = s->kind();
    switch (s->kind()) {
    case StmtKind::Block:
      for (const auto &child : static_cast<const Block &>(*s).stmts)
        if (child)
          node.children.push_back(compileStmt(child, depth));
      break;
    case StmtKind::For: {
      auto &loop = static_cast<const For &>(*s);
      node.loopKind = loop.loopKind;
      node.var = varIndex(*loop.var);
      node.exprs[0] = compileExpr(loop.begin);
      node.exprs[1] = compileExpr(loop.extent);
      node.body = compileBody(loop.body, depth + 1);
      break;
    }
    case StmtKind::Let: {
      auto &let = static_cast<const Let &>(*s);
      node.var = varIndex(*let.var);
      node.exprs[0] = compileExpr(let.value);
      node.body = compileBody(let.body, depth);
      break;
    }
    case StmtKind::If: {
      auto &branch = static_cast<const If &>(*s);
      node.exprs[0] = compileExpr(branch.cond);
      const int waitsBefore = waits_;
      node.body = compileBody(branch.thenBody, depth + 1);
      node.elseBody = compileBody(branch.elseBody, depth + 1);
      node.forks = waits_ > waitsBefore && node.body != kNoNode && node.elseBody != kNoNode;
      break;
    }
    case StmtKind::Allocate: {
      auto &allocation = static_cast<const Allocate &>(*s);
      node.buffer = bufferIndex(*allocation.buffer);
      node.body = compileBody(allocation.body, depth);
      break;
    }
    case StmtKind::Store: {
      auto &store = static_cast<const Store &>(*s);
      node.buffer = bufferIndex(*store.buffer);
      node.exprs[0] = compileExpr(store.index);
      node.exprs[1] = compileExpr(store.value);
      if (store.predicate)
        node.exprs[2] = compileExpr(store.predicate);
      break;
    }
    case StmtKind::Evaluate:
      node.exprs[0] = compileExpr(static_cast<const Evaluate &>(*s).value);
      break;
    case StmtKind::Barrier: break;
    case StmtKind::TargetInstr: {
      auto &instr = static_cast<const TargetInstr &>(*s);
      node.target = instr.op;
      switch (instr.op) {
      case TargetOp::Mma: {
        auto mma = instr.view<Mma>();
        node.op = static_cast<int>(mma.mmaKind);
        node.fragments[0] = fragment(mma.d);
        node.fragments[1] = fragment(mma.a);
        node.fragments[2] = fragment(mma.b);
        node.fragments[3] = fragment(mma.c);
        break;
      }
      case TargetOp::LdMatrix: {
        auto ld = instr.view<LdMatrix>();
        node.buffer = bufferIndex(*ld.source);
        node.op = ld.matrices;
        node.transpose = ld.transpose;
        node.fragments[0] = fragment(ld.destination);
        node.exprs[0] = compileExpr(ld.rowIndex);
        break;
      }
      case TargetOp::AsyncCopy: {
        auto copy = instr.view<AsyncCopy>();
        node.buffer = bufferIndex(*copy.destination);
        node.source = bufferIndex(*copy.source);
        node.op = copy.lanes;
        program_.buffers[static_cast<size_t>(node.buffer)].asyncDestination = true;
        program_.hasAsyncCopies = true;
        node.exprs[0] = compileExpr(copy.destinationIndex);
        node.exprs[1] = compileExpr(copy.sourceIndex);
        if (copy.predicate)
          node.exprs[2] = compileExpr(copy.predicate);
        break;
      }
      case TargetOp::AsyncCommit: program_.hasAsyncCopies = true; break;
      case TargetOp::AsyncWait:
        program_.hasAsyncCopies = true;
        node.op = instr.view<AsyncWait>().pendingGroups;
        break;
      case TargetOp::Wgmma: {
        node.wgmma = std::make_shared<Wgmma>(instr.view<Wgmma>());
        const Wgmma &product = *node.wgmma;
        program_.hasWgmma = true;
        node.buffer = bufferIndex(*product.a.buffer);
        node.source = bufferIndex(*product.b.buffer);
        program_.buffers[static_cast<size_t>(node.buffer)].wgmmaOperand = true;
        program_.buffers[static_cast<size_t>(node.source)].wgmmaOperand = true;
        program_.buffers[static_cast<size_t>(bufferIndex(*product.d.buffer))].wgmmaAccumulator =
            true;
        node.fragments[0] = fragment(product.d);
        node.exprs[0] = compileExpr(product.a.start);
        node.exprs[1] = compileExpr(product.b.start);
        break;
      }
      case TargetOp::WgmmaSync: {
        auto sync = instr.view<WgmmaSync>();
        program_.hasWgmma = true;
        node.op = static_cast<int>(sync.op);
        node.pending = sync.pendingGroups;
        break;
      }
      case TargetOp::Mbarrier: {
        auto barrier = instr.view<Mbarrier>();
        program_.hasMbarriers = true;
        node.op = static_cast<int>(barrier.op);
        node.buffer = bufferIndex(*barrier.barriers);
        node.count = barrier.count;
        program_.buffers[static_cast<size_t>(node.buffer)].mbarriers = true;
        node.exprs[0] = compileExpr(barrier.index);
        if (barrier.op == MbarrierOp::Wait) {
          ++waits_;
          node.exprs[1] = compileExpr(barrier.parity);
        }
        break;
      }
      case TargetOp::TmaLoad: {
        node.tma = std::make_shared<TmaLoad>(instr.view<TmaLoad>());
        const TmaLoad &copy = *node.tma;
        program_.hasMbarriers = true;
        node.buffer = bufferIndex(*copy.destination);
        node.source = bufferIndex(*copy.map->global);
        node.barriers = bufferIndex(*copy.barriers);
        KILN_CHECK(program_.buffers[static_cast<size_t>(node.source)].param != kNoNode,
                   "the verifier admits tensor maps of parameters only");
        program_.buffers[static_cast<size_t>(node.buffer)].tmaDestination = true;
        program_.buffers[static_cast<size_t>(node.barriers)].mbarriers = true;
        node.exprs[0] = compileExpr(copy.destinationIndex);
        node.exprs[1] = compileExpr(copy.barrierIndex);
        for (const ExprPtr &coord : copy.coords)
          node.coords.push_back(compileExpr(coord));
        break;
      }
      }
      break;
    }
    case StmtKind::Atomic: {
      auto &atomic = static_cast<const Atomic &>(*s);
      node.buffer = bufferIndex(*atomic.buffer);
      node.op = static_cast<int>(atomic.op);
      node.exprs[0] = compileExpr(atomic.index);
      node.exprs[1] = compileExpr(atomic.value);
      break;
    }
    }
    int index = static_cast<int>(program_.stmts.size());
    program_.stmts.push_back(std::move(node));
    return index;
  }
};

} // namespace

Expected<SimProgram> compileSimProgram(const kir::Kernel &kernel) {
  KILN_TRY_VOID(kir::verifyKernel(kernel));
  return ProgramCompiler(kernel).compile();
}

} // namespace kiln::sim
