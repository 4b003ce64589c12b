// The kernel IR evaluator. The kernel passes the verifier first, so its types, scopes and
// bindings are trusted here; it is then flattened into tables of nodes (children, variables
// and buffers as indices) and each expression node gets a fixed slot for its lanes, so
// running it does no allocation, hashing or error wrapping per operation: tests run lowered
// kernels of realistic sizes through it in Debug builds. What is left to check is the run's
// own business: the parameters' memory, bounds, limits, and the cross-thread operations that
// a serial run cannot give their meaning.
#include "ir/kernel/Evaluator.h"

#include "ir/kernel/FlatExpr.h"
#include "ir/kernel/ScalarOps.h"
#include "ir/kernel/TargetInstr.h"
#include "ir/kernel/Verifier.h"

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
using ExprNode = FlatExpr;

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
    KILN_TRY_VOID(verifyKernel(kernel_));
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

  /// The evaluator runs every thread loop serially, one thread after another, so it cannot
  /// give the GPU statements and shuffles (the verifier admits them in thread loops) their
  /// cross-thread meaning.
  std::unexpected<Error> gpuOnly(std::string_view keyword) {
    return fail(fmt::format("`{}` needs the threads of a block to run together: run the kernel "
                            "on the SIMT simulator (runtime/sim)",
                            keyword),
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

  // ---- Compilation: tables and slots ----------------------------------------------------------

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

  Expected<int> compileExpr(const ExprPtr &e) {
    if (auto it = exprIndex_.find(e.get()); it != exprIndex_.end())
      return it->second;
    if (e->kind() == ExprKind::Shuffle)
      return gpuOnly(kindName(e->kind()));
    KILN_TRY(ExprNode node, flattenExpr(
                                *e, [&](const ExprPtr &child) { return compileExpr(child); },
                                [&](const Var &var) { return varIndex(var); },
                                [&](const Buffer &buffer) { return bufferIndex(buffer); }));
    node.slot = static_cast<int>(scalars_.size());
    scalars_.resize(scalars_.size() + static_cast<size_t>(node.type.lanes));
    if (node.constant)
      for (int l = 0; l < node.type.lanes; ++l)
        scalars_[static_cast<size_t>(node.slot + l)] = node.constantValue;
    int index = static_cast<int>(exprs_.size());
    exprs_.push_back(node);
    exprIndex_.emplace(e.get(), index);
    return index;
  }

  Expected<int> compileStmt(const StmtPtr &s) {
    if (auto *instr = as<TargetInstr>(*s))
      return gpuOnly(targetInstrInfo(instr->op).name);
    if (isGpuOnly(s->kind()))
      return gpuOnly(kindName(s->kind()));
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
      KILN_TRY(node.exprs[1], compileExpr(loop.extent));
      KILN_TRY(node.body, compileBody(loop.body));
      break;
    }
    case StmtKind::Let: {
      auto &let = static_cast<const Let &>(*s);
      node.var = varIndex(*let.var);
      KILN_TRY(node.exprs[0], compileExpr(let.value));
      KILN_TRY(node.body, compileBody(let.body));
      break;
    }
    case StmtKind::If: {
      auto &branch = static_cast<const If &>(*s);
      KILN_TRY(node.exprs[0], compileExpr(branch.cond));
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
      KILN_TRY(node.exprs[1], compileExpr(store.value));
      if (store.predicate) {
        KILN_TRY(node.exprs[2], compileExpr(store.predicate));
      }
      break;
    }
    case StmtKind::Evaluate: {
      KILN_TRY(node.exprs[0], compileExpr(static_cast<const Evaluate &>(*s).value));
      break;
    }
    default: KILN_UNREACHABLE("GPU statements are refused above");
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
      const Scalar *value = varScalars_.data() + vars_[static_cast<size_t>(node.var)].offset;
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

  const BufferSlot &memoryOf(int buffer) {
    const BufferSlot &slot = buffers_[static_cast<size_t>(buffer)];
    KILN_CHECK(slot.bound, "the verifier admits only buffers in scope");
    return slot;
  }

  /// The address of element `first + lane`, or nullptr (and an error) when out of bounds.
  std::byte *element(const BufferSlot &memory, int64_t first, int lane, int lanes,
                     std::string_view access) {
    const Buffer &buffer = *memory.buffer;
    if (first < 0 || first >= memory.size || lane >= memory.size - first) {
      raise(outOfBoundsText(access, buffer.name, memory.size, first, lane, lanes));
      return nullptr;
    }
    return memory.data + (first + lane) * dtypeByteSize(buffer.dtype);
  }

  bool load(const ExprNode &node, Scalar *out) {
    const BufferSlot &memory = memoryOf(node.buffer);
    if (!eval(node.args[0]))
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
      std::byte *at = element(memory, first, l, lanes, "load");
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
      bind(node.var, lanesOf(node.exprs[0]));
      return exec(node.body);
    }
    case StmtKind::If:
      if (!eval(node.exprs[0]))
        return false;
      return exec(lanesOf(node.exprs[0])->i != 0 ? node.body : node.elseBody);
    case StmtKind::Allocate: return allocate(node);
    case StmtKind::Store: return store(node);
    case StmtKind::Evaluate: return eval(node.exprs[0]);
    default: KILN_UNREACHABLE("GPU statements are refused when compiled");
    }
  }

  /// Gives variable `var` its value. The verifier forbids rebinding a variable in its own
  /// scope and using one outside it, so nothing needs saving or unbinding.
  void bind(int var, const Scalar *value) {
    const VarSlot &slot = vars_[static_cast<size_t>(var)];
    std::copy(value, value + slot.lanes, varScalars_.data() + slot.offset);
  }

  bool loop(const StmtNode &node) {
    if (!eval(node.exprs[0]) || !eval(node.exprs[1]))
      return false;
    int64_t begin = lanesOf(node.exprs[0])->i, extent = lanesOf(node.exprs[1])->i;
    const Var &var = *vars_[static_cast<size_t>(node.var)].var;
    if (extent > 0 && begin > std::numeric_limits<int64_t>::max() - extent)
      return raise(
          fmt::format("loop {} in [{}, {} + {}) overflows i64", var.name, begin, begin, extent));
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
  }

  bool allocate(const StmtNode &node) {
    BufferSlot &slot = buffers_[static_cast<size_t>(node.buffer)];
    const Buffer &buffer = *slot.buffer;
    int64_t elementBytes = dtypeByteSize(buffer.dtype);
    if (buffer.size > options_.maxLocalBytes / elementBytes)
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
    const BufferSlot &memory = memoryOf(node.buffer);
    if (!eval(node.exprs[0]) || !eval(node.exprs[1]))
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
      if ((!mask || maskLane(mask, maskLanes, l)) && !element(memory, first, l, lanes, "store"))
        return false;
    DType dtype = memory.buffer->dtype;
    for (int l = 0; l < lanes; ++l)
      if (!mask || maskLane(mask, maskLanes, l))
        storeElement(memory.data + (first + l) * dtypeByteSize(dtype), dtype, value[l]);
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

std::string outOfBoundsText(std::string_view access, std::string_view buffer, int64_t size,
                            int64_t first, int lane, int lanes) {
  // first + lane can exceed i64 only when first is already out of bounds.
  __int128 index = static_cast<__int128>(first) + lane;
  std::string element = index <= std::numeric_limits<int64_t>::max()
                            ? fmt::format("{}", static_cast<int64_t>(index))
                            : fmt::format("{} + {}", first, lane);
  std::string vector =
      lanes > 1 ? fmt::format("; {}-lane access at {}[{}]", lanes, buffer, first) : "";
  return fmt::format("out-of-bounds {} {}[{}] ({} has {} elements{})", access, buffer, element,
                     buffer, size, vector);
}

} // namespace kiln::kir
