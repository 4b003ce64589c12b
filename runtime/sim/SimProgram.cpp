// Flattens a kernel into the simulator's node tables and checks every
// operand type once (the same rules as the kernel IR evaluator).
#include "runtime/sim/SimProgram.h"

#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/TensorMap.h"
#include "ir/kernel/WgmmaLayout.h"
#include "ir/kernel/Printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace kiln::sim {

namespace {

using namespace kiln::kir;

bool isThreadLoop(ForKind kind) {
  return kind == ForKind::ThreadX || kind == ForKind::ThreadY || kind == ForKind::ThreadZ;
}

class ProgramCompiler {
public:
  explicit ProgramCompiler(const Kernel &kernel) : kernel_(kernel) {}

  Expected<SimProgram> compile() {
    for (size_t i = 0; i < kernel_.params.size(); ++i)
      program_.buffers[static_cast<size_t>(bufferIndex(*kernel_.params[i]))].param =
          static_cast<int>(i);
    if (kernel_.body) {
      KILN_TRY(program_.root, compileStmt(kernel_.body, 0));
    }
    return std::move(program_);
  }

private:
  const Kernel &kernel_;
  SimProgram program_;
  std::unordered_map<const Expr *, int> exprIndex_;
  std::unordered_map<const Var *, int> varIndex_;
  std::unordered_map<const Buffer *, int> bufferIndex_;
  bool insideThreads_ = false;
  int waits_ = 0; ///< mbarrier waits compiled so far

  std::unexpected<Error> fail(std::string message,
                              ErrorCode code = ErrorCode::InvalidArgument) const {
    return makeError(code, fmt::format("kernel {}: {}", kernel_.name, message));
  }

  Expected<void> inKernel(Expected<void> check) const {
    if (!check)
      return fail(check.error().message(), check.error().code());
    return {};
  }

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

  Expected<void> checkMask(int node, int lanes, std::string_view what) const {
    const Type &type = typeOf(node);
    if (type.dtype != DType::Bool || (type.lanes != 1 && type.lanes != lanes))
      return fail(fmt::format("{} must be bool or boolx{}, got {}", what, lanes, typeName(type)));
    return {};
  }

  Expected<void> checkIndex(int node, std::string_view what) const {
    if (typeOf(node) != Type::index())
      return fail(fmt::format("{} index must be i64, got {}", what, typeName(typeOf(node))));
    return {};
  }

  Expected<void> needThreads(std::string_view what) const {
    if (!insideThreads_)
      return fail(fmt::format("{} outside the thread loops", what), ErrorCode::VerifyError);
    return {};
  }

  /// Checks that `f` is `count` elements of a register buffer of `dtype`.
  Expected<SimFragment> fragment(const Fragment &f, DType dtype, int count,
                                 std::string_view what) {
    if (!f.buffer || f.buffer->scope != MemScope::Register)
      return fail(fmt::format("{} must be a register buffer", what));
    if (f.buffer->dtype != dtype)
      return fail(fmt::format("{} {} is {}, not {}", what, f.buffer->name,
                              dtypeName(f.buffer->dtype), dtypeName(dtype)));
    if (f.offset < 0 || f.offset > f.buffer->size - count)
      return fail(fmt::format("{} {}[{}, {}) is outside its {} elements", what, f.buffer->name,
                              f.offset, f.offset + count, f.buffer->size));
    return SimFragment{bufferIndex(*f.buffer), f.offset};
  }

  Expected<int> compileExpr(const ExprPtr &e) {
    if (!e)
      return fail("null expression");
    if (auto it = exprIndex_.find(e.get()); it != exprIndex_.end())
      return it->second;
    SimExpr node;
    node.kind = e->kind();
    node.type = e->type();
    switch (e->kind()) {
    case ExprKind::IntImm:
      node.constant = true;
      node.constantValue =
          Scalar::ofInt(wrapInteger(static_cast<const IntImm &>(*e).value, node.type.dtype));
      break;
    case ExprKind::FloatImm:
      node.constant = true;
      node.constantValue = Scalar::ofFloat(static_cast<const FloatImm &>(*e).value);
      break;
    case ExprKind::VarRef: {
      const Var &var = *static_cast<const VarRef &>(*e).var;
      node.var = varIndex(var);
      node.type = var.type;
      break;
    }
    case ExprKind::Unary: {
      auto &unary = static_cast<const Unary &>(*e);
      KILN_TRY(node.args[0], compileExpr(unary.operand));
      node.op = static_cast<int>(unary.op);
      node.type = typeOf(node.args[0]);
      node.operandDtype = node.type.dtype;
      KILN_TRY_VOID(inKernel(checkUnaryLane(unary.op, node.operandDtype)));
      break;
    }
    case ExprKind::Binary: {
      auto &binary = static_cast<const Binary &>(*e);
      KILN_TRY(node.args[0], compileExpr(binary.lhs));
      KILN_TRY(node.args[1], compileExpr(binary.rhs));
      const Type a = typeOf(node.args[0]), b = typeOf(node.args[1]);
      if (a != b)
        return fail(fmt::format("binary operands have different types ({} and {})", typeName(a),
                                typeName(b)));
      node.op = static_cast<int>(binary.op);
      node.operandDtype = a.dtype;
      node.type = Type{isComparison(binary.op) ? DType::Bool : a.dtype, a.lanes};
      KILN_TRY_VOID(inKernel(checkBinaryLane(binary.op, a.dtype)));
      break;
    }
    case ExprKind::Select: {
      auto &select = static_cast<const Select &>(*e);
      KILN_TRY(node.args[0], compileExpr(select.cond));
      KILN_TRY(node.args[1], compileExpr(select.onTrue));
      KILN_TRY(node.args[2], compileExpr(select.onFalse));
      const Type a = typeOf(node.args[1]), b = typeOf(node.args[2]);
      if (a != b)
        return fail(
            fmt::format("select arms have different types ({} and {})", typeName(a), typeName(b)));
      node.type = a;
      KILN_TRY_VOID(checkMask(node.args[0], a.lanes, "select condition"));
      break;
    }
    case ExprKind::Cast: {
      KILN_TRY(node.args[0], compileExpr(static_cast<const Cast &>(*e).value));
      const Type from = typeOf(node.args[0]);
      if (from.lanes != e->type().lanes)
        return fail(fmt::format("cast from {} to {} changes the lane count", typeName(from),
                                typeName(e->type())));
      node.operandDtype = from.dtype;
      break;
    }
    case ExprKind::Load: {
      auto &load = static_cast<const Load &>(*e);
      node.buffer = bufferIndex(*load.buffer);
      KILN_TRY(node.args[0], compileExpr(load.index));
      KILN_TRY_VOID(checkIndex(node.args[0], "load"));
      if (load.predicate) {
        KILN_TRY(node.args[1], compileExpr(load.predicate));
        KILN_TRY_VOID(checkMask(node.args[1], e->type().lanes, "load predicate"));
      }
      break;
    }
    case ExprKind::Call: {
      auto &call = static_cast<const Call &>(*e);
      if (call.args.empty() || call.args.size() > 3)
        return fail(fmt::format("{} has {} arguments", intrinsicName(call.fn), call.args.size()));
      for (size_t i = 0; i < call.args.size(); ++i) {
        KILN_TRY(node.args[i], compileExpr(call.args[i]));
        if (typeOf(node.args[i]) != typeOf(node.args[0]))
          return fail(fmt::format("{} arguments have different types", intrinsicName(call.fn)));
      }
      node.argCount = static_cast<int>(call.args.size());
      node.op = static_cast<int>(call.fn);
      node.type = typeOf(node.args[0]);
      node.operandDtype = node.type.dtype;
      KILN_TRY_VOID(inKernel(checkIntrinsicLane(call.fn, node.operandDtype, call.args.size())));
      break;
    }
    case ExprKind::Broadcast: {
      KILN_TRY(node.args[0], compileExpr(static_cast<const Broadcast &>(*e).value));
      if (typeOf(node.args[0]).isVector())
        return fail("broadcast of a vector");
      break;
    }
    case ExprKind::Shuffle: {
      auto &shuffle = static_cast<const Shuffle &>(*e);
      KILN_TRY_VOID(needThreads("a warp shuffle"));
      KILN_TRY(node.args[0], compileExpr(shuffle.value));
      KILN_TRY(node.args[1], compileExpr(shuffle.lane));
      const Type value = typeOf(node.args[0]);
      if (value.isVector() || (value.dtype != DType::F32 && value.dtype != DType::F64 &&
                               value.dtype != DType::I32 && value.dtype != DType::I64))
        return fail(fmt::format("a shuffle moves an f32, f64, i32 or i64 scalar, not {}",
                                typeName(value)));
      if (typeOf(node.args[1]) != Type::scalar(DType::I32))
        return fail(fmt::format("a shuffle's lane must be an i32 scalar, got {}",
                                typeName(typeOf(node.args[1]))));
      node.type = value;
      node.op = static_cast<int>(shuffle.mode);
      break;
    }
    }
    if (node.type.lanes < 1)
      return fail(fmt::format("an expression has {} lanes", node.type.lanes));
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

  Expected<int> compileBody(const StmtPtr &s, int depth) {
    if (!s)
      return kNoNode;
    return compileStmt(s, depth);
  }

  Expected<int> compileStmt(const StmtPtr &s, int depth) {
    program_.maxDepth = std::max(program_.maxDepth, depth);
    SimStmt node;
    node.kind = s->kind();
    switch (s->kind()) {
    case StmtKind::Block:
      for (const auto &child : static_cast<const Block &>(*s).stmts) {
        if (child) {
          KILN_TRY(int index, compileStmt(child, depth));
          node.children.push_back(index);
        }
      }
      break;
    case StmtKind::For: {
      auto &loop = static_cast<const For &>(*s);
      node.loopKind = loop.loopKind;
      node.var = varIndex(*loop.var);
      KILN_TRY(node.exprs[0], compileExpr(loop.begin));
      KILN_TRY_VOID(checkIndex(node.exprs[0], "loop begin"));
      KILN_TRY(node.exprs[1], compileExpr(loop.extent));
      KILN_TRY_VOID(checkIndex(node.exprs[1], "loop extent"));
      if (loop.var->type != Type::index())
        return fail(fmt::format("loop variable {} is {}, not i64", loop.var->name,
                                typeName(loop.var->type)));
      bool wasInside = insideThreads_;
      insideThreads_ = insideThreads_ || isThreadLoop(loop.loopKind);
      KILN_TRY(node.body, compileBody(loop.body, depth + 1));
      insideThreads_ = wasInside;
      break;
    }
    case StmtKind::Let: {
      auto &let = static_cast<const Let &>(*s);
      node.var = varIndex(*let.var);
      KILN_TRY(node.exprs[0], compileExpr(let.value));
      const Type value = typeOf(node.exprs[0]);
      if (value != let.var->type)
        return fail(fmt::format("let {}: {} bound to a {} value", let.var->name,
                                typeName(let.var->type), typeName(value)));
      KILN_TRY(node.body, compileBody(let.body, depth));
      break;
    }
    case StmtKind::If: {
      auto &branch = static_cast<const If &>(*s);
      KILN_TRY(node.exprs[0], compileExpr(branch.cond));
      KILN_TRY_VOID(checkMask(node.exprs[0], 1, "if condition"));
      const int waitsBefore = waits_;
      KILN_TRY(node.body, compileBody(branch.thenBody, depth + 1));
      KILN_TRY(node.elseBody, compileBody(branch.elseBody, depth + 1));
      node.forks = waits_ > waitsBefore && node.body != kNoNode && node.elseBody != kNoNode;
      break;
    }
    case StmtKind::Allocate: {
      auto &allocation = static_cast<const Allocate &>(*s);
      if (allocation.buffer->scope == MemScope::Global)
        return fail(fmt::format("allocates global buffer {} (global buffers are parameters)",
                                allocation.buffer->name));
      node.buffer = bufferIndex(*allocation.buffer);
      KILN_TRY(node.body, compileBody(allocation.body, depth));
      break;
    }
    case StmtKind::Store: {
      auto &store = static_cast<const Store &>(*s);
      node.buffer = bufferIndex(*store.buffer);
      KILN_TRY(node.exprs[0], compileExpr(store.index));
      KILN_TRY_VOID(checkIndex(node.exprs[0], "store"));
      KILN_TRY(node.exprs[1], compileExpr(store.value));
      const Type value = typeOf(node.exprs[1]);
      if (value.dtype != store.buffer->dtype)
        return fail(fmt::format("store of {} into {} buffer {}", typeName(value),
                                dtypeName(store.buffer->dtype), store.buffer->name));
      if (store.predicate) {
        KILN_TRY(node.exprs[2], compileExpr(store.predicate));
        KILN_TRY_VOID(checkMask(node.exprs[2], value.lanes, "store predicate"));
      }
      break;
    }
    case StmtKind::Evaluate: {
      KILN_TRY(node.exprs[0], compileExpr(static_cast<const Evaluate &>(*s).value));
      break;
    }
    case StmtKind::Barrier: {
      KILN_TRY_VOID(needThreads("a barrier"));
      break;
    }
    case StmtKind::Mma: {
      auto &mma = static_cast<const Mma &>(*s);
      const MmaShapeInfo &info = mmaShapeInfo(mma.mmaKind);
      KILN_TRY_VOID(needThreads("an mma"));
      node.op = static_cast<int>(mma.mmaKind);
      KILN_TRY(node.fragments[0], fragment(mma.d, DType::F32, info.cElements, "mma d"));
      KILN_TRY(node.fragments[1], fragment(mma.a, info.operandDtype, info.aElements, "mma a"));
      KILN_TRY(node.fragments[2], fragment(mma.b, info.operandDtype, info.bElements, "mma b"));
      KILN_TRY(node.fragments[3], fragment(mma.c, DType::F32, info.cElements, "mma c"));
      break;
    }
    case StmtKind::LdMatrix: {
      auto &ld = static_cast<const LdMatrix &>(*s);
      KILN_TRY_VOID(needThreads("an ldmatrix"));
      if (ld.matrices != 1 && ld.matrices != 2 && ld.matrices != 4)
        return fail(fmt::format("ldmatrix of {} matrices (1, 2 or 4)", ld.matrices));
      if (!ld.source || ld.source->scope != MemScope::Shared)
        return fail("ldmatrix reads a shared buffer");
      int bytes = dtypeByteSize(ld.source->dtype);
      if (bytes != 2 && bytes != 1)
        return fail("ldmatrix reads 16-bit elements, or 8-bit ones as pairs");
      if (bytes == 1 && ld.transpose)
        return fail("ldmatrix .trans of 8-bit elements would split their pairs");
      node.buffer = bufferIndex(*ld.source);
      node.op = ld.matrices;
      node.transpose = ld.transpose;
      KILN_TRY(node.fragments[0],
               fragment(ld.destination, ld.source->dtype,
                        ldMatrixElementsPerMatrix(bytes) * ld.matrices, "ldmatrix destination"));
      KILN_TRY(node.exprs[0], compileExpr(ld.rowIndex));
      KILN_TRY_VOID(checkIndex(node.exprs[0], "ldmatrix row"));
      break;
    }
    case StmtKind::AsyncCopy: {
      auto &copy = static_cast<const AsyncCopy &>(*s);
      KILN_TRY_VOID(needThreads("an async copy"));
      if (!copy.destination || !copy.source || copy.destination->scope != MemScope::Shared ||
          copy.source->scope != MemScope::Global)
        return fail("an async copy goes from a global buffer to a shared one");
      if (copy.destination->dtype != copy.source->dtype)
        return fail(fmt::format("async copy from {} {} into {} {}", dtypeName(copy.source->dtype),
                                copy.source->name, dtypeName(copy.destination->dtype),
                                copy.destination->name));
      int64_t bytes = int64_t{copy.lanes} * dtypeByteSize(copy.source->dtype);
      if (copy.lanes < 1 || (bytes != 4 && bytes != 8 && bytes != 16))
        return fail(fmt::format("an async copy moves 4, 8 or 16 bytes, not {}", bytes));
      node.buffer = bufferIndex(*copy.destination);
      node.source = bufferIndex(*copy.source);
      node.op = copy.lanes;
      program_.buffers[static_cast<size_t>(node.buffer)].asyncDestination = true;
      program_.hasAsyncCopies = true;
      KILN_TRY(node.exprs[0], compileExpr(copy.destinationIndex));
      KILN_TRY_VOID(checkIndex(node.exprs[0], "async copy destination"));
      KILN_TRY(node.exprs[1], compileExpr(copy.sourceIndex));
      KILN_TRY_VOID(checkIndex(node.exprs[1], "async copy source"));
      if (copy.predicate) {
        KILN_TRY(node.exprs[2], compileExpr(copy.predicate));
        KILN_TRY_VOID(checkMask(node.exprs[2], 1, "async copy predicate"));
      }
      break;
    }
    case StmtKind::AsyncCommit: {
      KILN_TRY_VOID(needThreads("an async commit"));
      program_.hasAsyncCopies = true;
      break;
    }
    case StmtKind::AsyncWait: {
      KILN_TRY_VOID(needThreads("an async wait"));
      program_.hasAsyncCopies = true;
      node.op = static_cast<const AsyncWait &>(*s).pendingGroups;
      if (node.op < 0)
        return fail(fmt::format("async wait for {} pending groups", node.op));
      break;
    }
    case StmtKind::Wgmma: {
      auto &product = static_cast<const Wgmma &>(*s);
      KILN_TRY_VOID(needThreads("a wgmma"));
      if (std::optional<std::string> problem = wgmmaProblem(product))
        return fail(*problem);
      program_.hasWgmma = true;
      node.wgmma = &product;
      node.buffer = bufferIndex(*product.a.buffer);
      node.source = bufferIndex(*product.b.buffer);
      program_.buffers[static_cast<size_t>(node.buffer)].wgmmaOperand = true;
      program_.buffers[static_cast<size_t>(node.source)].wgmmaOperand = true;
      program_.buffers[static_cast<size_t>(bufferIndex(*product.d.buffer))].wgmmaAccumulator =
          true;
      KILN_TRY(node.fragments[0], fragment(product.d, DType::F32, product.n / 2, "wgmma d"));
      KILN_TRY(node.exprs[0], compileExpr(product.a.start));
      KILN_TRY_VOID(checkIndex(node.exprs[0], "wgmma a start"));
      KILN_TRY(node.exprs[1], compileExpr(product.b.start));
      KILN_TRY_VOID(checkIndex(node.exprs[1], "wgmma b start"));
      break;
    }
    case StmtKind::WgmmaSync: {
      auto &sync = static_cast<const WgmmaSync &>(*s);
      KILN_TRY_VOID(needThreads("a wgmma sync"));
      program_.hasWgmma = true;
      node.op = static_cast<int>(sync.op);
      node.pending = sync.pendingGroups;
      if (node.pending < 0)
        return fail(fmt::format("wgmma wait for {} pending groups", node.pending));
      break;
    }
    case StmtKind::Mbarrier: {
      auto &barrier = static_cast<const Mbarrier &>(*s);
      KILN_TRY_VOID(needThreads("an mbarrier"));
      if (barrier.barriers->scope != MemScope::Shared || barrier.barriers->dtype != DType::I64)
        return fail(fmt::format("mbarrier {} is not a shared i64 buffer", barrier.barriers->name));
      program_.hasMbarriers = true;
      node.op = static_cast<int>(barrier.op);
      node.buffer = bufferIndex(*barrier.barriers);
      node.count = barrier.count;
      program_.buffers[static_cast<size_t>(node.buffer)].mbarriers = true;
      KILN_TRY(node.exprs[0], compileExpr(barrier.index));
      KILN_TRY_VOID(checkIndex(node.exprs[0], "mbarrier"));
      if (barrier.op == MbarrierOp::Wait) {
        ++waits_;
        KILN_TRY(node.exprs[1], compileExpr(barrier.parity));
        KILN_TRY_VOID(checkIndex(node.exprs[1], "mbarrier parity"));
      }
      break;
    }
    case StmtKind::TmaLoad: {
      auto &copy = static_cast<const TmaLoad &>(*s);
      KILN_TRY_VOID(needThreads("a bulk tensor copy"));
      if (std::optional<std::string> problem = tmaLoadProblem(copy))
        return fail(*problem);
      program_.hasMbarriers = true;
      node.tma = &copy;
      node.buffer = bufferIndex(*copy.destination);
      node.source = bufferIndex(*copy.map->global);
      node.barriers = bufferIndex(*copy.barriers);
      if (program_.buffers[static_cast<size_t>(node.source)].param == kNoNode)
        return fail(fmt::format("tensor map {} reads {}, which is not a parameter",
                                copy.map->name, copy.map->global->name));
      program_.buffers[static_cast<size_t>(node.buffer)].tmaDestination = true;
      program_.buffers[static_cast<size_t>(node.barriers)].mbarriers = true;
      KILN_TRY(node.exprs[0], compileExpr(copy.destinationIndex));
      KILN_TRY_VOID(checkIndex(node.exprs[0], "bulk tensor copy destination"));
      KILN_TRY(node.exprs[1], compileExpr(copy.barrierIndex));
      KILN_TRY_VOID(checkIndex(node.exprs[1], "bulk tensor copy mbarrier"));
      for (const ExprPtr &coord : copy.coords) {
        KILN_TRY(int c, compileExpr(coord));
        KILN_TRY_VOID(checkIndex(c, "bulk tensor copy coordinate"));
        node.coords.push_back(c);
      }
      break;
    }
    case StmtKind::Atomic: {
      auto &atomic = static_cast<const Atomic &>(*s);
      KILN_TRY_VOID(needThreads("an atomic"));
      const Buffer &buffer = *atomic.buffer;
      if (buffer.scope != MemScope::Global && buffer.scope != MemScope::Shared)
        return fail(fmt::format("atomic {} on {} buffer {} (only global and shared memory)",
                                atomicOpName(atomic.op), memScopeName(buffer.scope), buffer.name));
      bool isAdd = atomic.op == AtomicOp::Add;
      bool typeOk = buffer.dtype == DType::I32 || buffer.dtype == DType::I64 ||
                    (isAdd && (buffer.dtype == DType::F32 || buffer.dtype == DType::F64));
      if (!typeOk)
        return fail(fmt::format("atomic {} is not defined on {} (buffer {})",
                                atomicOpName(atomic.op), dtypeName(buffer.dtype), buffer.name));
      node.buffer = bufferIndex(buffer);
      node.op = static_cast<int>(atomic.op);
      KILN_TRY(node.exprs[0], compileExpr(atomic.index));
      KILN_TRY_VOID(checkIndex(node.exprs[0], "atomic"));
      KILN_TRY(node.exprs[1], compileExpr(atomic.value));
      if (typeOf(node.exprs[1]) != Type::scalar(buffer.dtype))
        return fail(fmt::format("atomic {} of {} into {} buffer {}", atomicOpName(atomic.op),
                                typeName(typeOf(node.exprs[1])), dtypeName(buffer.dtype),
                                buffer.name));
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
  return ProgramCompiler(kernel).compile();
}

} // namespace kiln::sim
