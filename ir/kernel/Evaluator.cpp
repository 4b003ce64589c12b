// The kernel IR evaluator. The kernel is first flattened into tables of nodes
// (children, variables and buffers as indices, every type checked once) and
// each expression node gets a fixed slot for its lanes, so running it does
// no allocation, hashing or error wrapping per operation: tests run lowered
// kernels of realistic sizes through it in Debug builds.
#include "ir/kernel/Evaluator.h"

#include "ir/kernel/Printer.h"
#include "ir/kernel/ScalarOps.h"

#include <fmt/format.h>

#include <limits>
#include <new>
#include <optional>
#include <unordered_map>
#include <vector>

namespace kiln::kir {

namespace {

constexpr int kNone = -1;

/// One expression node; its value lives at scalars[slot .. slot + lanes).
struct ExprNode {
  ExprKind kind;
  Type type;
  DType operandDtype = DType::F32; ///< Unary, Binary, Cast, Call: the operands' dtype
  int op = 0;                      ///< BinaryOp, UnaryOp or Intrinsic
  int slot = 0;
  int args[3] = {kNone, kNone, kNone}; ///< children (Select: cond, onTrue, onFalse;
                                       ///< Load: index, predicate)
  int argCount = 0;
  int var = kNone;    ///< VarRef
  int buffer = kNone; ///< Load
  bool constant = false;
};

struct StmtNode {
  StmtKind kind;
  int var = kNone;                      ///< For, Let
  int buffer = kNone;                   ///< Allocate, Store
  int exprs[3] = {kNone, kNone, kNone}; ///< For: begin, extent; Let: value; If: cond;
                                        ///< Store: index, value, predicate; Evaluate: value
  int body = kNone, elseBody = kNone;   ///< For/Let/Allocate body; If branches
  std::vector<int> children;            ///< Block
};

struct VarSlot {
  const Var *var;
  int offset;
  int lanes;
  bool bound = false;
};

struct BufferSlot {
  const Buffer *buffer;
  std::byte *data = nullptr;
  int64_t size = 0;
  bool bound = false;
};

class Evaluator {
public:
  Evaluator(const Kernel &kernel, const EvaluateOptions &options)
      : kernel_(kernel), options_(options) {}

  Expected<void> run(std::span<const std::span<std::byte>> params) {
    if (params.size() != kernel_.params.size())
      return fail(fmt::format("takes {} buffers, got {}", kernel_.params.size(), params.size()));
    for (size_t i = 0; i < params.size(); ++i) {
      const Buffer &buffer = *kernel_.params[i];
      auto bytes = static_cast<uint64_t>(buffer.size) * dtypeByteSize(buffer.dtype);
      if (buffer.size < 0 || params[i].size() != bytes)
        return fail(fmt::format("parameter {} ({}[{}]) needs {} bytes, got {}", buffer.name,
                                dtypeName(buffer.dtype), buffer.size, bytes, params[i].size()));
      BufferSlot &slot = buffers_[bufferIndex(buffer)];
      slot.data = params[i].data();
      slot.size = buffer.size;
      slot.bound = true;
    }
    if (!kernel_.body)
      return {};
    KILN_TRY(int root, compileStmt(kernel_.body));
    // Raw table pointers for the run: the tables no longer change size.
    exprTable_ = exprs_.data();
    scalarTable_ = scalars_.data();
    if (!exec(root))
      return std::unexpected(std::move(*error_));
    return {};
  }

private:
  const Kernel &kernel_;
  const EvaluateOptions &options_;
  std::vector<ExprNode> exprs_;
  std::vector<StmtNode> stmts_;
  std::vector<Scalar> scalars_; ///< every expression node's lanes
  std::vector<Scalar> varScalars_;
  std::vector<VarSlot> vars_;
  std::vector<BufferSlot> buffers_;
  std::unordered_map<const Expr *, int> exprIndex_;
  std::unordered_map<const Var *, int> varIndex_;
  std::unordered_map<const Buffer *, int> bufferIndex_;
  std::optional<Error> error_;
  int64_t iterations_ = 0;
  const ExprNode *exprTable_ = nullptr;
  Scalar *scalarTable_ = nullptr;

  /// The evaluator runs every thread loop serially, one thread after another,
  /// so it cannot give cross-thread operations their meaning.
  std::unexpected<Error> gpuOnly(std::string_view what) {
    return fail(fmt::format("{} needs the threads of a block to run together: run the kernel on "
                            "the SIMT simulator (runtime/sim)",
                            what),
                ErrorCode::Unsupported);
  }

  std::unexpected<Error> fail(std::string message, ErrorCode code = ErrorCode::InvalidArgument) {
    return makeError(code, fmt::format("kernel {}: {}", kernel_.name, message));
  }

  /// Records a run-time error; returns false for `return raise(...)`.
  bool raise(std::string message, ErrorCode code = ErrorCode::InvalidArgument) {
    error_ = fail(std::move(message), code).error();
    return false;
  }

  // ---- Compilation: tables, slots and every type check ----------------------------------------

  int varIndex(const Var &var) {
    auto [it, inserted] = varIndex_.emplace(&var, static_cast<int>(vars_.size()));
    if (inserted) {
      vars_.push_back(VarSlot{&var, static_cast<int>(varScalars_.size()), var.type.lanes});
      varScalars_.resize(varScalars_.size() + static_cast<size_t>(var.type.lanes));
    }
    return it->second;
  }

  int bufferIndex(const Buffer &buffer) {
    auto [it, inserted] = bufferIndex_.emplace(&buffer, static_cast<int>(buffers_.size()));
    if (inserted)
      buffers_.push_back(BufferSlot{&buffer});
    return it->second;
  }

  Expected<void> checkMask(int node, int lanes, std::string_view what) {
    const Type &type = exprs_[node].type;
    if (type.dtype != DType::Bool || (type.lanes != 1 && type.lanes != lanes))
      return fail(fmt::format("{} must be bool or boolx{}, got {}", what, lanes, typeName(type)));
    return {};
  }

  Expected<void> checkIndex(int node, std::string_view what) {
    if (exprs_[node].type != Type::index())
      return fail(fmt::format("{} index must be i64, got {}", what, typeName(exprs_[node].type)));
    return {};
  }

  Expected<void> inKernel(Expected<void> check) {
    if (!check)
      return fail(check.error().message(), check.error().code());
    return {};
  }

  Expected<int> compileExpr(const ExprPtr &e) {
    if (!e)
      return fail("null expression");
    if (auto it = exprIndex_.find(e.get()); it != exprIndex_.end())
      return it->second;
    ExprNode node{e->kind(), e->type()};
    switch (e->kind()) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm: node.constant = true; break;
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
      node.operandDtype = exprs_[node.args[0]].type.dtype;
      node.type = exprs_[node.args[0]].type;
      KILN_TRY_VOID(inKernel(checkUnaryLane(unary.op, node.operandDtype)));
      break;
    }
    case ExprKind::Binary: {
      auto &binary = static_cast<const Binary &>(*e);
      KILN_TRY(node.args[0], compileExpr(binary.lhs));
      KILN_TRY(node.args[1], compileExpr(binary.rhs));
      const Type &a = exprs_[node.args[0]].type, &b = exprs_[node.args[1]].type;
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
      const Type &a = exprs_[node.args[1]].type, &b = exprs_[node.args[2]].type;
      if (a != b)
        return fail(
            fmt::format("select arms have different types ({} and {})", typeName(a), typeName(b)));
      node.type = a;
      KILN_TRY_VOID(checkMask(node.args[0], a.lanes, "select condition"));
      break;
    }
    case ExprKind::Cast: {
      KILN_TRY(node.args[0], compileExpr(static_cast<const Cast &>(*e).value));
      const Type &from = exprs_[node.args[0]].type;
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
        if (exprs_[node.args[i]].type != exprs_[node.args[0]].type)
          return fail(fmt::format("{} arguments have different types", intrinsicName(call.fn)));
      }
      node.argCount = static_cast<int>(call.args.size());
      node.op = static_cast<int>(call.fn);
      node.type = exprs_[node.args[0]].type;
      node.operandDtype = node.type.dtype;
      KILN_TRY_VOID(inKernel(checkIntrinsicLane(call.fn, node.operandDtype, call.args.size())));
      break;
    }
    case ExprKind::Broadcast: {
      KILN_TRY(node.args[0], compileExpr(static_cast<const Broadcast &>(*e).value));
      if (exprs_[node.args[0]].type.isVector())
        return fail("broadcast of a vector");
      break;
    }
    case ExprKind::Shuffle: return gpuOnly("a warp shuffle");
    }
    if (node.type.lanes < 1)
      return fail(fmt::format("an expression has {} lanes", node.type.lanes));
    node.slot = static_cast<int>(scalars_.size());
    scalars_.resize(scalars_.size() + static_cast<size_t>(node.type.lanes));
    if (node.constant) {
      Scalar value =
          e->kind() == ExprKind::IntImm
              ? Scalar::ofInt(wrapInteger(static_cast<const IntImm &>(*e).value, node.type.dtype))
              : Scalar::ofFloat(static_cast<const FloatImm &>(*e).value);
      for (int l = 0; l < node.type.lanes; ++l)
        scalars_[static_cast<size_t>(node.slot + l)] = value;
    }
    int index = static_cast<int>(exprs_.size());
    exprs_.push_back(node);
    exprIndex_.emplace(e.get(), index);
    return index;
  }

  Expected<int> compileStmt(const StmtPtr &s) {
    StmtNode node;
    node.kind = s->kind();
    switch (s->kind()) {
    case StmtKind::Block:
      for (const auto &child : static_cast<const Block &>(*s).stmts) {
        if (child) {
          KILN_TRY(int index, compileStmt(child));
          node.children.push_back(index);
        }
      }
      break;
    case StmtKind::For: {
      auto &loop = static_cast<const For &>(*s);
      node.var = varIndex(*loop.var);
      KILN_TRY(node.exprs[0], compileExpr(loop.begin));
      KILN_TRY_VOID(checkIndex(node.exprs[0], "loop begin"));
      KILN_TRY(node.exprs[1], compileExpr(loop.extent));
      KILN_TRY_VOID(checkIndex(node.exprs[1], "loop extent"));
      if (loop.var->type != Type::index())
        return fail(fmt::format("loop variable {} is {}, not i64", loop.var->name,
                                typeName(loop.var->type)));
      KILN_TRY(node.body, compileBody(loop.body));
      break;
    }
    case StmtKind::Let: {
      auto &let = static_cast<const Let &>(*s);
      node.var = varIndex(*let.var);
      KILN_TRY(node.exprs[0], compileExpr(let.value));
      const Type &value = exprs_[node.exprs[0]].type;
      if (value != let.var->type)
        return fail(fmt::format("let {}: {} bound to a {} value", let.var->name,
                                typeName(let.var->type), typeName(value)));
      KILN_TRY(node.body, compileBody(let.body));
      break;
    }
    case StmtKind::If: {
      auto &branch = static_cast<const If &>(*s);
      KILN_TRY(node.exprs[0], compileExpr(branch.cond));
      KILN_TRY_VOID(checkMask(node.exprs[0], 1, "if condition"));
      KILN_TRY(node.body, compileBody(branch.thenBody));
      KILN_TRY(node.elseBody, compileBody(branch.elseBody));
      break;
    }
    case StmtKind::Allocate: {
      auto &allocation = static_cast<const Allocate &>(*s);
      node.buffer = bufferIndex(*allocation.buffer);
      KILN_TRY(node.body, compileBody(allocation.body));
      break;
    }
    case StmtKind::Store: {
      auto &store = static_cast<const Store &>(*s);
      node.buffer = bufferIndex(*store.buffer);
      KILN_TRY(node.exprs[0], compileExpr(store.index));
      KILN_TRY_VOID(checkIndex(node.exprs[0], "store"));
      KILN_TRY(node.exprs[1], compileExpr(store.value));
      const Type &value = exprs_[node.exprs[1]].type;
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
    case StmtKind::Barrier: return gpuOnly("a barrier");
    case StmtKind::Atomic: return gpuOnly("an atomic");
    case StmtKind::Mma: return gpuOnly("a matrix product (mma)");
    case StmtKind::LdMatrix: return gpuOnly("an ldmatrix");
    case StmtKind::AsyncCopy:
    case StmtKind::AsyncCommit:
    case StmtKind::AsyncWait: return gpuOnly("an asynchronous copy");
    case StmtKind::Wgmma:
    case StmtKind::WgmmaSync: return gpuOnly("a warpgroup matrix product (wgmma)");
    case StmtKind::Mbarrier: return gpuOnly("an mbarrier");
    case StmtKind::TmaLoad: return gpuOnly("a bulk tensor copy");
    }
    stmts_.push_back(std::move(node));
    return static_cast<int>(stmts_.size() - 1);
  }

  Expected<int> compileBody(const StmtPtr &s) {
    if (!s)
      return kNone;
    return compileStmt(s);
  }

  // ---- Expressions ----------------------------------------------------------------------------

  Scalar *lanesOf(int node) { return scalarTable_ + exprTable_[node].slot; }

  static bool maskLane(const Scalar *mask, int maskLanes, int lane) {
    return mask[maskLanes == 1 ? 0 : lane].i != 0;
  }

  bool eval(int n) {
    const ExprNode &node = exprTable_[n];
    if (node.constant)
      return true;
    Scalar *out = scalarTable_ + node.slot;
    const int lanes = node.type.lanes;
    switch (node.kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm: return true;
    case ExprKind::VarRef: {
      const VarSlot &var = vars_[static_cast<size_t>(node.var)];
      if (!var.bound)
        return raise(fmt::format("variable {} is used outside its scope", var.var->name));
      const Scalar *value = varScalars_.data() + var.offset;
      for (int l = 0; l < lanes; ++l)
        out[l] = value[l];
      return true;
    }
    case ExprKind::Unary: {
      if (!eval(node.args[0]))
        return false;
      const Scalar *x = lanesOf(node.args[0]);
      auto op = static_cast<UnaryOp>(node.op);
      for (int l = 0; l < lanes; ++l)
        out[l] = unaryLane(op, node.operandDtype, x[l]);
      return true;
    }
    case ExprKind::Binary: {
      if (!eval(node.args[0]) || !eval(node.args[1]))
        return false;
      const Scalar *x = lanesOf(node.args[0]), *y = lanesOf(node.args[1]);
      auto op = static_cast<BinaryOp>(node.op);
      for (int l = 0; l < lanes; ++l)
        out[l] = binaryLane(op, node.operandDtype, x[l], y[l]);
      return true;
    }
    case ExprKind::Select: {
      // Both arms are evaluated, as a backend may: a fault in either is reported.
      if (!eval(node.args[1]) || !eval(node.args[2]) || !eval(node.args[0]))
        return false;
      const Scalar *cond = lanesOf(node.args[0]);
      const Scalar *onTrue = lanesOf(node.args[1]), *onFalse = lanesOf(node.args[2]);
      int condLanes = exprTable_[node.args[0]].type.lanes;
      for (int l = 0; l < lanes; ++l)
        out[l] = maskLane(cond, condLanes, l) ? onTrue[l] : onFalse[l];
      return true;
    }
    case ExprKind::Cast: {
      if (!eval(node.args[0]))
        return false;
      const Scalar *x = lanesOf(node.args[0]);
      for (int l = 0; l < lanes; ++l)
        out[l] = castLane(x[l], node.operandDtype, node.type.dtype);
      return true;
    }
    case ExprKind::Load: return load(node, out);
    case ExprKind::Call: {
      for (int a = 0; a < node.argCount; ++a)
        if (!eval(node.args[a]))
          return false;
      auto fn = static_cast<Intrinsic>(node.op);
      Scalar args[3];
      for (int l = 0; l < lanes; ++l) {
        for (int a = 0; a < node.argCount; ++a)
          args[a] = lanesOf(node.args[a])[l];
        out[l] = intrinsicLane(fn, node.operandDtype, args);
      }
      return true;
    }
    case ExprKind::Broadcast: {
      if (!eval(node.args[0]))
        return false;
      Scalar value = *lanesOf(node.args[0]);
      for (int l = 0; l < lanes; ++l)
        out[l] = value;
      return true;
    }
    case ExprKind::Shuffle: KILN_UNREACHABLE("shuffles are rejected when compiled");
    }
    KILN_UNREACHABLE("expression kind");
  }

  const BufferSlot *memoryOf(int buffer) {
    const BufferSlot &slot = buffers_[static_cast<size_t>(buffer)];
    if (!slot.bound) {
      raise(fmt::format("buffer {} is neither a parameter nor allocated here", slot.buffer->name));
      return nullptr;
    }
    return &slot;
  }

  /// The address of element `first + lane`, or nullptr (and an error) when out of bounds.
  std::byte *element(const BufferSlot &memory, int64_t first, int lane, int lanes,
                     std::string_view access) {
    const Buffer &buffer = *memory.buffer;
    if (first < 0 || first >= memory.size || lane >= memory.size - first) {
      // first + lane can exceed i64 only when first is already out of bounds.
      __int128 index = static_cast<__int128>(first) + lane;
      std::string elementText = index <= std::numeric_limits<int64_t>::max()
                                    ? fmt::format("{}", static_cast<int64_t>(index))
                                    : fmt::format("{} + {}", first, lane);
      std::string vector =
          lanes > 1 ? fmt::format("; {}-lane access at {}[{}]", lanes, buffer.name, first) : "";
      raise(fmt::format("out-of-bounds {} {}[{}] ({} has {} elements{})", access, buffer.name,
                        elementText, buffer.name, memory.size, vector));
      return nullptr;
    }
    return memory.data + (first + lane) * dtypeByteSize(buffer.dtype);
  }

  bool load(const ExprNode &node, Scalar *out) {
    const BufferSlot *memory = memoryOf(node.buffer);
    if (!memory || !eval(node.args[0]))
      return false;
    int64_t first = lanesOf(node.args[0])->i;
    const Scalar *mask = nullptr;
    int maskLanes = 1;
    if (node.args[1] != kNone) {
      if (!eval(node.args[1]))
        return false;
      mask = lanesOf(node.args[1]);
      maskLanes = exprTable_[node.args[1]].type.lanes;
    }
    const int lanes = node.type.lanes;
    for (int l = 0; l < lanes; ++l) {
      if (mask && !maskLane(mask, maskLanes, l)) {
        out[l] = Scalar{}; // reads nothing, yields zero
        continue;
      }
      std::byte *at = element(*memory, first, l, lanes, "load");
      if (!at)
        return false;
      out[l] = loadElement(at, node.type.dtype);
    }
    return true;
  }

  // ---- Statements -----------------------------------------------------------------------------

  bool exec(int s) {
    if (s == kNone)
      return true;
    const StmtNode &node = stmts_[static_cast<size_t>(s)];
    switch (node.kind) {
    case StmtKind::Block:
      for (int child : node.children)
        if (!exec(child))
          return false;
      return true;
    case StmtKind::For: return loop(node);
    case StmtKind::Let: {
      if (!eval(node.exprs[0]))
        return false;
      return bind(node.var, lanesOf(node.exprs[0]), [&] { return exec(node.body); });
    }
    case StmtKind::If:
      if (!eval(node.exprs[0]))
        return false;
      return exec(lanesOf(node.exprs[0])->i != 0 ? node.body : node.elseBody);
    case StmtKind::Allocate: return allocate(node);
    case StmtKind::Store: return store(node);
    case StmtKind::Evaluate: return eval(node.exprs[0]);
    case StmtKind::Barrier:
    case StmtKind::Atomic:
    case StmtKind::Mma:
    case StmtKind::LdMatrix:
    case StmtKind::AsyncCopy:
    case StmtKind::AsyncCommit:
    case StmtKind::AsyncWait:
    case StmtKind::Wgmma:
    case StmtKind::WgmmaSync:
    case StmtKind::Mbarrier:
    case StmtKind::TmaLoad: KILN_UNREACHABLE("GPU statements are rejected when compiled");
    }
    KILN_UNREACHABLE("statement kind");
  }

  /// Binds variable `var` to `value` while `body` runs; a rebinding of a bound
  /// variable (shadowing) restores the outer value afterwards.
  template <typename Body> bool bind(int var, const Scalar *value, Body body) {
    VarSlot &slot = vars_[static_cast<size_t>(var)];
    Scalar *storage = varScalars_.data() + slot.offset;
    std::vector<Scalar> saved;
    bool wasBound = slot.bound;
    if (wasBound)
      saved.assign(storage, storage + slot.lanes);
    std::copy(value, value + slot.lanes, storage);
    slot.bound = true;
    bool ok = body();
    slot.bound = wasBound;
    if (wasBound)
      std::copy(saved.begin(), saved.end(), storage);
    return ok;
  }

  bool loop(const StmtNode &node) {
    if (!eval(node.exprs[0]) || !eval(node.exprs[1]))
      return false;
    int64_t begin = lanesOf(node.exprs[0])->i, extent = lanesOf(node.exprs[1])->i;
    const Var &var = *vars_[static_cast<size_t>(node.var)].var;
    if (extent > 0 && begin > std::numeric_limits<int64_t>::max() - extent)
      return raise(
          fmt::format("loop {} in [{}, {} + {}) overflows i64", var.name, begin, begin, extent));
    Scalar counter = Scalar::ofInt(begin);
    return bind(node.var, &counter, [&] {
      Scalar &value = varScalars_[static_cast<size_t>(vars_[node.var].offset)];
      for (int64_t i = 0; i < extent; ++i) {
        if (++iterations_ > options_.maxLoopIterations)
          return raise(fmt::format("more than {} loop iterations", options_.maxLoopIterations),
                       ErrorCode::Unsupported);
        value = Scalar::ofInt(begin + i);
        if (!exec(node.body))
          return false;
      }
      return true;
    });
  }

  bool allocate(const StmtNode &node) {
    BufferSlot &slot = buffers_[static_cast<size_t>(node.buffer)];
    const Buffer &buffer = *slot.buffer;
    int64_t elementBytes = dtypeByteSize(buffer.dtype);
    if (buffer.size < 0 || buffer.size > options_.maxLocalBytes / elementBytes)
      return raise(fmt::format("allocation {}: {}[{}] exceeds the evaluator's {} byte limit",
                               buffer.name, dtypeName(buffer.dtype), buffer.size,
                               options_.maxLocalBytes),
                   ErrorCode::OutOfMemory);
    std::vector<std::byte> storage;
    try {
      storage.resize(static_cast<size_t>(buffer.size * elementBytes));
    } catch (const std::bad_alloc &) {
      return raise(fmt::format("allocation {}: out of memory for {}[{}]", buffer.name,
                               dtypeName(buffer.dtype), buffer.size),
                   ErrorCode::OutOfMemory);
    }
    BufferSlot saved = slot;
    slot.data = storage.data();
    slot.size = buffer.size;
    slot.bound = true;
    bool ok = exec(node.body);
    buffers_[static_cast<size_t>(node.buffer)] = saved;
    return ok;
  }

  bool store(const StmtNode &node) {
    const BufferSlot *memory = memoryOf(node.buffer);
    if (!memory || !eval(node.exprs[0]) || !eval(node.exprs[1]))
      return false;
    int64_t first = lanesOf(node.exprs[0])->i;
    const Scalar *value = lanesOf(node.exprs[1]);
    const int lanes = exprTable_[node.exprs[1]].type.lanes;
    const Scalar *mask = nullptr;
    int maskLanes = 1;
    if (node.exprs[2] != kNone) {
      if (!eval(node.exprs[2]))
        return false;
      mask = lanesOf(node.exprs[2]);
      maskLanes = exprTable_[node.exprs[2]].type.lanes;
    }
    // Check every active lane before writing any, so a failing store writes nothing.
    for (int l = 0; l < lanes; ++l)
      if ((!mask || maskLane(mask, maskLanes, l)) && !element(*memory, first, l, lanes, "store"))
        return false;
    DType dtype = memory->buffer->dtype;
    for (int l = 0; l < lanes; ++l)
      if (!mask || maskLane(mask, maskLanes, l))
        storeElement(memory->data + (first + l) * dtypeByteSize(dtype), dtype, value[l]);
    return true;
  }
};

} // namespace

Expected<void> evaluateKernel(const Kernel &kernel, std::span<const std::span<std::byte>> params,
                              const EvaluateOptions &options) {
  return Evaluator(kernel, options).run(params);
}

Expected<void> evaluateKernel(const Kernel &kernel, std::span<HostTensor> params,
                              const EvaluateOptions &options) {
  if (params.size() != kernel.params.size())
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("kernel {}: takes {} buffers, got {}", kernel.name,
                                 kernel.params.size(), params.size()));
  std::vector<std::span<std::byte>> memory;
  for (size_t i = 0; i < params.size(); ++i) {
    const Buffer &buffer = *kernel.params[i];
    if (params[i].dtype() != buffer.dtype || params[i].numElements() != buffer.size)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("kernel {}: parameter {} is {}[{}], got a tensor {}",
                                   kernel.name, buffer.name, dtypeName(buffer.dtype), buffer.size,
                                   params[i].typeStr()));
    memory.push_back(std::as_writable_bytes(params[i].bytes()));
  }
  return evaluateKernel(kernel, memory, options);
}

} // namespace kiln::kir
