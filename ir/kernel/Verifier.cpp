// The kernel-IR verifier's walk: expression types, scopes of variables and buffers, where GPU
// statements and barriers may stand, and the launch structure of GPU kernels.
#include "ir/kernel/Verifier.h"

#include "ir/kernel/GpuLaunch.h"
#include "ir/kernel/Printer.h"
#include "ir/kernel/ScalarOps.h"
#include "ir/kernel/TargetInstr.h"
#include "ir/kernel/VerifierGpuStatements.h"
#include "ir/kernel/VerifierSummary.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace kiln::kir {

namespace {

std::string quoted(const ExprPtr &expr) { return fmt::format("`{}`", printExpr(expr)); }

/// Walks a kernel once, keeping the variables and buffers in scope and whether control flow
/// still is uniform across the threads of a block.
///
/// "Uniform" is decided conservatively, from the expressions alone: an expression varies by
/// thread when it reads a thread.* loop variable, a variable bound to a varying expression (a
/// let, or a loop whose bounds vary), a shuffle, or a register or local buffer (each thread's
/// own memory). Loads of global and shared memory at uniform indices are uniform: between
/// barriers every thread reads the same value (anything else is a race, which the simulator
/// reports). A barrier is refused under an if whose condition varies, or in a loop whose bounds
/// vary.
class KernelVerifier {
public:
  KernelVerifier(const Kernel &kernel, const VerifyOptions &options)
      : kernel_(kernel), options_(options) {}

  Expected<void> run() {
    for (const BufferPtr &param : kernel_.params) {
      if (!param)
        return failBare("has a null parameter");
      if (param->scope != MemScope::Global)
        return failBare(fmt::format("parameter {} is a {} buffer (parameters are global)",
                                    param->name, memScopeName(param->scope)));
      if (!buffers_.insert(param.get()).second)
        return failBare(fmt::format("parameter {} is passed twice", param->name));
    }
    KILN_TRY_VOID(stmt(kernel_.body));
    if (isGpuKernel(kernel_)) {
      // The block-outside-thread nest, one loop per axis, [0, constant) bounds; the thread
      // count is a property of the device, checked at launch.
      auto launch = gpuLaunchOf(kernel_, std::numeric_limits<int64_t>::max());
      if (!launch)
        return makeError(ErrorCode::VerifyError, launch.error().message());
    }
    return {};
  }

private:
  const Kernel &kernel_;
  const VerifyOptions &options_;
  std::unordered_set<const Var *> vars_;        ///< in scope
  std::unordered_set<const Var *> varying_;     ///< in scope and varying by thread
  std::unordered_set<const Buffer *> buffers_;  ///< parameters and enclosing allocations
  /// Expressions checked since a variable or buffer last left scope, and whether they vary:
  /// a shared subexpression is checked once.
  std::unordered_map<const Expr *, bool> checked_;
  const Stmt *current_ = nullptr;   ///< the statement being checked, for messages
  int threadLoops_ = 0;             ///< thread.* loops around the current statement
  const Stmt *divergent_ = nullptr; ///< the innermost if or loop whose control varies

  std::unexpected<Error> failBare(std::string what) const {
    return makeError(ErrorCode::VerifyError, fmt::format("kernel {}: {}", kernel_.name, what));
  }

  /// `what` is wrong in the current statement.
  std::unexpected<Error> fail(std::string what) const {
    if (!current_)
      return failBare(std::move(what));
    return failBare(fmt::format("{}, in `{}`", what, statementSummary(*current_)));
  }

  void leaveScope() { checked_.clear(); }

  // ---- Expressions --------------------------------------------------------------------------

  /// Checks `e` and everything below it; returns whether it varies by thread.
  Expected<bool> expr(const ExprPtr &e) {
    if (auto it = checked_.find(e.get()); it != checked_.end())
      return it->second;
    KILN_TRY(bool varying, exprNode(*e, e));
    const Type &type = e->type();
    if (type.lanes < 1 || type.lanes > options_.maxLanes)
      return fail(fmt::format("{} has {} lanes (1 .. {})", quoted(e), type.lanes,
                              options_.maxLanes));
    checked_.emplace(e.get(), varying);
    return varying;
  }

  /// An operation of ScalarOps.h's `check` refused for these operands.
  Expected<void> defined(Expected<void> check, const ExprPtr &e) {
    if (!check)
      return fail(fmt::format("{} in {}", check.error().message(), quoted(e)));
    return {};
  }

  Expected<bool> exprNode(const Expr &node, const ExprPtr &e) {
    switch (node.kind()) {
    // A node's own types (operands that agree, result types, arities, lane counts of casts
    // and broadcasts) are its constructor's checks (NodeChecks.cpp): only what depends on
    // context, on the operation's definition for the dtype, and on the lane limit is here.
    case ExprKind::IntImm:
    case ExprKind::FloatImm: return false;
    case ExprKind::VarRef: {
      const VarPtr &var = static_cast<const VarRef &>(node).var;
      if (!vars_.contains(var.get()))
        return fail(fmt::format("variable {} is used outside its scope (no enclosing for or "
                                "let binds it)",
                                var->name));
      return varying_.contains(var.get());
    }
    case ExprKind::Unary: {
      auto &unary = static_cast<const Unary &>(node);
      KILN_TRY(bool varying, expr(unary.operand));
      KILN_TRY_VOID(defined(checkUnaryLane(unary.op, node.type().dtype), e));
      return varying;
    }
    case ExprKind::Binary: {
      auto &binary = static_cast<const Binary &>(node);
      KILN_TRY(bool lhs, expr(binary.lhs));
      KILN_TRY(bool rhs, expr(binary.rhs));
      KILN_TRY_VOID(defined(checkBinaryLane(binary.op, binary.lhs->type().dtype), e));
      return lhs || rhs;
    }
    case ExprKind::Select: {
      auto &select = static_cast<const Select &>(node);
      KILN_TRY(bool cond, expr(select.cond));
      KILN_TRY(bool onTrue, expr(select.onTrue));
      KILN_TRY(bool onFalse, expr(select.onFalse));
      return cond || onTrue || onFalse;
    }
    case ExprKind::Cast: {
      const ExprPtr &value = static_cast<const Cast &>(node).value;
      return expr(value);
    }
    case ExprKind::Load: {
      auto &load = static_cast<const Load &>(node);
      KILN_TRY_VOID(accessible(load.buffer, "load from"));
      KILN_TRY(bool varying, index(load.index, "load"));
      if (load.predicate) {
        KILN_TRY(bool predicate, expr(load.predicate));
        KILN_TRY_VOID(mask(load.predicate, node.type().lanes, "load predicate"));
        varying |= predicate;
      }
      const MemScope scope = load.buffer->scope;
      return varying || scope == MemScope::Register || scope == MemScope::Local;
    }
    case ExprKind::Call: {
      auto &call = static_cast<const Call &>(node);
      bool varying = false;
      for (const ExprPtr &arg : call.args) {
        KILN_TRY(bool v, expr(arg));
        varying |= v;
      }
      KILN_TRY_VOID(
          defined(checkIntrinsicLane(call.fn, node.type().dtype, intrinsicArity(call.fn)), e));
      return varying;
    }
    case ExprKind::Broadcast: {
      return expr(static_cast<const Broadcast &>(node).value);
    }
    case ExprKind::Shuffle: {
      auto &shuffle = static_cast<const Shuffle &>(node);
      if (threadLoops_ == 0)
        return fail("a warp shuffle outside the thread loops");
      KILN_TRY_VOID(expr(shuffle.value));
      KILN_TRY_VOID(expr(shuffle.lane));
      if (std::optional<std::string> problem = shuffleProblem(shuffle))
        return fail(fmt::format("{} in {}", *problem, quoted(e)));
      return true;
    }
    }
    return fail("an expression of unknown kind");
  }

  /// A predicate or condition: bool with 1 lane or `lanes`.
  Expected<void> mask(const ExprPtr &e, int lanes, std::string_view what) {
    const Type &type = e->type();
    if (type.dtype != DType::Bool || (type.lanes != 1 && type.lanes != lanes))
      return fail(fmt::format("{} {} must be bool{}, got {}", what, quoted(e),
                              lanes == 1 ? "" : fmt::format(" or boolx{}", lanes),
                              typeName(type)));
    return {};
  }

  /// An element index, loop bound or coordinate: an i64 scalar. Returns whether it varies.
  Expected<bool> index(const ExprPtr &e, std::string_view what) {
    KILN_TRY(bool varying, expr(e));
    if (e->type() != Type::index())
      return fail(fmt::format("{} index {} must be an i64 scalar, got {}", what, quoted(e),
                              typeName(e->type())));
    return varying;
  }

  /// A buffer used here must be a parameter or allocated around the use.
  Expected<void> accessible(const BufferPtr &buffer, std::string_view use) {
    if (!buffers_.contains(buffer.get()))
      return fail(fmt::format("{} buffer {}, which is neither a parameter nor allocated around "
                              "this use",
                              use, buffer->name));
    return {};
  }

  // ---- Statements ---------------------------------------------------------------------------
  // hasAllOperands() has checked every statement's operands are present before its rules run.

  Expected<void> stmt(const StmtPtr &s) {
    if (!s)
      return {}; // an empty body or else branch
    current_ = nullptr;
    if (!hasAllOperands(*s))
      return failBare(fmt::format("a {} statement is missing an operand (null)",
                                  statementKindName(s->kind())));
    current_ = s.get();
    if (isGpuOnly(s->kind()) && threadLoops_ == 0)
      return fail(fmt::format("{} outside the thread loops (GPU statements run inside a "
                              "thread.* loop nest)",
                              gpuStatementName(*s)));
    switch (s->kind()) {
    case StmtKind::Block:
      for (const StmtPtr &child : static_cast<const Block &>(*s).stmts)
        KILN_TRY_VOID(stmt(child));
      return {};
    case StmtKind::For: return loop(static_cast<const For &>(*s));
    case StmtKind::Let: return let(static_cast<const Let &>(*s));
    case StmtKind::If: return branch(static_cast<const If &>(*s));
    case StmtKind::Allocate: return allocate(static_cast<const Allocate &>(*s));
    case StmtKind::Store: return store(static_cast<const Store &>(*s));
    case StmtKind::Evaluate: {
      KILN_TRY_VOID(expr(static_cast<const Evaluate &>(*s).value));
      return {};
    }
    case StmtKind::Barrier:
      if (divergent_)
        return fail(fmt::format("a barrier under control flow that varies by thread (`{}`): "
                                "every thread of the block must reach it",
                                statementSummary(*divergent_)));
      return {};
    default: return gpuStatement(*s);
    }
  }

  Expected<void> bind(const VarPtr &var, std::string_view binder) {
    if (vars_.contains(var.get()))
      return fail(fmt::format("{} rebinds variable {}, which is already in scope", binder,
                              var->name));
    return {};
  }

  void unbind(const Var *var) {
    vars_.erase(var);
    varying_.erase(var);
    leaveScope();
  }

  /// Checks `body` with `cause` as the innermost divergent control flow when `diverges`.
  Expected<void> body(const StmtPtr &body, bool diverges, const Stmt *cause) {
    const Stmt *outer = divergent_;
    if (diverges)
      divergent_ = cause;
    auto result = stmt(body);
    divergent_ = outer;
    return result;
  }

  Expected<void> loop(const For &loop) {
    KILN_TRY_VOID(bind(loop.var, "loop"));
    KILN_TRY(bool begin, index(loop.begin, "loop begin"));
    KILN_TRY(bool extent, index(loop.extent, "loop extent"));
    const bool thread = isThreadLoop(loop.loopKind);
    vars_.insert(loop.var.get());
    if (thread || begin || extent)
      varying_.insert(loop.var.get());
    threadLoops_ += thread;
    auto result = body(loop.body, !thread && (begin || extent), &loop);
    threadLoops_ -= thread;
    unbind(loop.var.get());
    return result;
  }

  Expected<void> let(const Let &let) {
    KILN_TRY_VOID(bind(let.var, "let"));
    KILN_TRY(bool varying, expr(let.value));
    vars_.insert(let.var.get());
    if (varying)
      varying_.insert(let.var.get());
    auto result = stmt(let.body);
    unbind(let.var.get());
    return result;
  }

  Expected<void> branch(const If &branch) {
    KILN_TRY(bool varying, expr(branch.cond));
    KILN_TRY_VOID(body(branch.thenBody, varying, &branch));
    return body(branch.elseBody, varying, &branch);
  }

  Expected<void> allocate(const Allocate &allocation) {
    const BufferPtr &buffer = allocation.buffer;
    if (buffer->size < 0)
      return fail(fmt::format("allocates {} with {} elements", buffer->name, buffer->size));
    if (!buffers_.insert(buffer.get()).second)
      return fail(fmt::format("allocates buffer {}, which is already a parameter or allocated "
                              "around it",
                              buffer->name));
    auto result = stmt(allocation.body);
    buffers_.erase(buffer.get());
    leaveScope();
    return result;
  }

  Expected<void> store(const Store &store) {
    KILN_TRY_VOID(accessible(store.buffer, "store into"));
    KILN_TRY_VOID(index(store.index, "store"));
    KILN_TRY_VOID(expr(store.value));
    if (store.predicate) {
      KILN_TRY_VOID(expr(store.predicate));
      KILN_TRY_VOID(mask(store.predicate, store.value->type().lanes, "store predicate"));
    }
    return {};
  }

  /// The GPU statements: their buffers in scope, their indices i64, then their own fields.
  Expected<void> gpuStatement(const Stmt &s) {
    switch (s.kind()) {
    case StmtKind::Atomic: {
      auto &atomic = static_cast<const Atomic &>(s);
      KILN_TRY_VOID(accessible(atomic.buffer, "atomic on"));
      KILN_TRY_VOID(index(atomic.index, "atomic"));
      KILN_TRY_VOID(expr(atomic.value));
      break;
    }
    case StmtKind::TargetInstr: {
      auto &instr = static_cast<const TargetInstr &>(s);
      const TargetInstrInfo &info = targetInstrInfo(instr.op);
      for (size_t i = 0; i < info.operands.size(); ++i) {
        const OperandSpec &spec = info.operands[i];
        const TargetOperand &operand = instr.operands[i];
        std::string what = fmt::format("{} {}", info.name, spec.role);
        if (auto *map = std::get_if<TensorMapPtr>(&operand);
            map && std::ranges::none_of(kernel_.params, [&](const BufferPtr &p) {
              return p.get() == (*map)->global.get();
            }))
          return fail(fmt::format("tensor map {} reads {}, which is not a parameter",
                                  (*map)->name, (*map)->global->name));
        BufferPtr buffer = operandBuffer(operand);
        if (buffer && !std::holds_alternative<TensorMapPtr>(operand))
          KILN_TRY_VOID(accessible(buffer, fmt::format("{} uses", what)));
        std::vector<ExprPtr> exprs;
        forEachExpr(operand, [&](const ExprPtr &e) { exprs.push_back(e); });
        for (const ExprPtr &e : exprs) {
          if (spec.kind != OperandKind::Predicate) {
            KILN_TRY_VOID(index(e, what));
          } else {
            KILN_TRY_VOID(expr(e));
            KILN_TRY_VOID(mask(e, 1, what));
          }
        }
      }
      break;
    }
    default: break;
    }
    current_ = &s;
    if (std::optional<std::string> problem = gpuStatementProblem(s))
      return fail(*problem);
    return {};
  }
};

} // namespace

Expected<void> verifyKernel(const Kernel &kernel, const VerifyOptions &options) {
  return KernelVerifier(kernel, options).run();
}

} // namespace kiln::kir
