// The lockstep machine: each expression node is evaluated for every active
// thread of a block at once (a column of values per node), so interpretation
// costs one dispatch per node per statement, not per thread. Active threads
// are sorted lists of linear thread ids kept in a preallocated arena.
#include "runtime/sim/SimtMachine.h"

#include "runtime/sim/AsyncCopyQueues.h"
#include "runtime/sim/Fibers.h"
#include "runtime/sim/MbarrierTracker.h"
#include "runtime/sim/LaneKernels.h"
#include "runtime/sim/SimMemory.h"
#include "runtime/sim/SimMessages.h"
#include "runtime/sim/SimTensorCore.h"
#include "runtime/sim/WgmmaQueues.h"

#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/WgmmaLayout.h"
#include "ir/kernel/Printer.h"
#include "ir/kernel/TensorMap.h"
#include "ir/kernel/ScalarOps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <vector>

namespace kiln::sim {

namespace {

using namespace kiln::kir;

constexpr int kWarpSize = 32;

bool isBlockLoop(ForKind kind) {
  return kind == ForKind::BlockX || kind == ForKind::BlockY || kind == ForKind::BlockZ;
}
bool isThreadLoop(ForKind kind) {
  return kind == ForKind::ThreadX || kind == ForKind::ThreadY || kind == ForKind::ThreadZ;
}
int axisOf(ForKind kind) {
  switch (kind) {
  case ForKind::BlockX:
  case ForKind::ThreadX: return 0;
  case ForKind::BlockY:
  case ForKind::ThreadY: return 1;
  default: return 2;
  }
}

/// The threads running a statement: ascending linear thread ids.
struct Active {
  const int32_t *ids;
  int32_t count;
};

class SimtMachine {
public:
  SimtMachine(const Kernel &kernel, const SimProgram &program, const GpuLaunch &launch,
              const SimOptions &options)
      : kernel_(kernel), program_(program), launch_(launch), options_(options),
        threads_(static_cast<int32_t>(launch.threadsPerBlock())) {}

  Expected<SimStats> run(std::span<const std::span<std::byte>> params) {
    stats_.threadsPerBlock = threads_;
    stats_.sharedBytesPerBlock = launch_.sharedBytes;
    const size_t T = static_cast<size_t>(threads_);
    try {
      values_.assign(static_cast<size_t>(program_.totalLanes) * T, Scalar{});
      varValues_.assign(static_cast<size_t>(program_.totalVarLanes) * T, Scalar{});
      mainStacks_.allocate(T, program_.maxDepth);
    } catch (const std::bad_alloc &) {
      return fail(fmt::format("out of memory for the values of {} threads", threads_),
                  ErrorCode::OutOfMemory);
    }
    varBound_.assign(program_.vars.size(), 0);
    for (const SimExpr &node : program_.exprs)
      if (node.constant)
        for (int l = 0; l < node.type.lanes; ++l)
          std::fill_n(values_.begin() + static_cast<ptrdiff_t>((node.slot + l) * T), T,
                      node.constantValue);
    memories_.resize(program_.buffers.size());
    for (size_t b = 0; b < program_.buffers.size(); ++b) {
      const SimBuffer &buffer = program_.buffers[b];
      SimMemory &memory = memories_[b];
      memory.buffer = buffer.buffer;
      memory.elementBytes = dtypeByteSize(buffer.buffer->dtype);
      if (buffer.param != kNoNode) {
        memory.data = params[static_cast<size_t>(buffer.param)].data();
        memory.size = buffer.buffer->size;
        memory.bound = true;
      }
    }
    stacks_ = &mainStacks_;
    for (int32_t t = 0; t < threads_; ++t)
      stacks_->arena[static_cast<size_t>(t)] = t;
    stacks_->arenaTop = T;
    if (program_.root != kNoNode && !exec(program_.root, Active{stacks_->arena.data(), threads_}))
      return std::unexpected(std::move(*error_));
    return stats_;
  }

private:
  const Kernel &kernel_;
  const SimProgram &program_;
  const GpuLaunch &launch_;
  const SimOptions &options_;
  const int32_t threads_;
  SimStats stats_;
  std::vector<Scalar> values_;    ///< (slot + lane) * threads + thread
  std::vector<Scalar> varValues_; ///< (offset + lane) * threads + thread
  std::vector<int32_t> varBound_; ///< per variable: the bindings in scope (fibers may each hold one)
  std::vector<SimMemory> memories_;
  /// Active-thread lists and per-thread loop bounds, each a stack: one per fiber.
  struct Stacks {
    std::vector<int32_t> arena;
    size_t arenaTop = 0;
    std::vector<int64_t> bounds;
    size_t boundsTop = 0;
    void allocate(size_t threads, int depth) {
      arena.assign(threads * static_cast<size_t>(depth + 3), 0);
      bounds.assign(2 * threads * static_cast<size_t>(depth + 3), 0);
    }
  };
  Stacks mainStacks_;
  Stacks *stacks_ = &mainStacks_; ///< the running fiber's
  Fibers fibers_;
  MbarrierTracker mbarriers_; ///< the block's bulk copies in flight
  std::optional<Error> error_;
  std::array<int64_t, 3> blockCoord_{0, 0, 0};
  bool insideThreads_ = false;
  AsyncCopyQueues asyncCopies_; ///< the block's copies in flight
  WgmmaQueues wgmmas_;          ///< the block's warpgroup products in flight
  /// Per thread: the wgmma_shared_fence and wgmma_fence statements it has run in this block.
  std::vector<int64_t> sharedFences_, accumulatorFences_;
  int64_t steps_ = 0;
  uint64_t epoch_ = 0; ///< barrier intervals, over the whole run

  // ---- Errors ---------------------------------------------------------------------------------

  std::unexpected<Error> fail(std::string message,
                              ErrorCode code = ErrorCode::InvalidArgument) const {
    return makeError(code, fmt::format("kernel {}: {}", kernel_.name, message));
  }

  /// Records an error (the first one wins: fibers unwinding after it may report more).
  bool raise(std::string message, ErrorCode code = ErrorCode::InvalidArgument) {
    if (!error_)
      error_ = fail(std::move(message), code).error();
    return false;
  }

  std::string threadText(int64_t t) const { return threadCoordText(t, launch_.block); }
  std::string blockText() const { return coordText(blockCoord_); }
  std::string byThread(int64_t t) const {
    return fmt::format("by block {} thread {}", blockText(), threadText(t));
  }

  // ---- Values ---------------------------------------------------------------------------------

  size_t T() const { return static_cast<size_t>(threads_); }

  /// Lane 0 of node `n`'s column (lane l of thread t is at [l * threads + t]).
  /// Variables are read in place, without a copy.
  const Scalar *column(int n) const {
    const SimExpr &node = program_.exprs[static_cast<size_t>(n)];
    if (node.kind == ExprKind::VarRef)
      return varValues_.data() + static_cast<size_t>(program_.varOffsets[node.var]) * T();
    return values_.data() + static_cast<size_t>(node.slot) * T();
  }
  Scalar *output(const SimExpr &node) { return values_.data() + static_cast<size_t>(node.slot) * T(); }

  bool eval(int n, Active a) {
    const SimExpr &node = program_.exprs[static_cast<size_t>(n)];
    if (node.constant)
      return true;
    const size_t T = this->T();
    const int lanes = node.type.lanes;
    switch (node.kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm: return true;
    case ExprKind::VarRef:
      if (!varBound_[static_cast<size_t>(node.var)])
        return raise(fmt::format("variable {} is used outside its scope",
                                 program_.vars[static_cast<size_t>(node.var)].var->name));
      return true;
    case ExprKind::Unary: {
      if (!eval(node.args[0], a))
        return false;
      const Scalar *x = column(node.args[0]);
      Scalar *out = output(node);
      auto op = static_cast<UnaryOp>(node.op);
      for (int l = 0; l < lanes; ++l)
        for (int32_t i = 0; i < a.count; ++i) {
          size_t at = l * T + static_cast<size_t>(a.ids[i]);
          out[at] = unaryLane(op, node.operandDtype, x[at]);
        }
      return true;
    }
    case ExprKind::Binary: {
      if (!eval(node.args[0], a) || !eval(node.args[1], a))
        return false;
      binaryColumns(static_cast<BinaryOp>(node.op), node.operandDtype, lanes, T, a.ids, a.count,
                    column(node.args[0]), column(node.args[1]), output(node));
      return true;
    }
    case ExprKind::Select: {
      if (!eval(node.args[1], a) || !eval(node.args[2], a) || !eval(node.args[0], a))
        return false;
      const Scalar *cond = column(node.args[0]);
      const Scalar *onTrue = column(node.args[1]), *onFalse = column(node.args[2]);
      bool wideCond = program_.exprs[static_cast<size_t>(node.args[0])].type.lanes != 1;
      Scalar *out = output(node);
      for (int l = 0; l < lanes; ++l)
        for (int32_t i = 0; i < a.count; ++i) {
          size_t t = static_cast<size_t>(a.ids[i]), at = l * T + t;
          out[at] = cond[wideCond ? at : t].i != 0 ? onTrue[at] : onFalse[at];
        }
      return true;
    }
    case ExprKind::Cast: {
      if (!eval(node.args[0], a))
        return false;
      const Scalar *x = column(node.args[0]);
      Scalar *out = output(node);
      for (int l = 0; l < lanes; ++l)
        for (int32_t i = 0; i < a.count; ++i) {
          size_t at = l * T + static_cast<size_t>(a.ids[i]);
          out[at] = castLane(x[at], node.operandDtype, node.type.dtype);
        }
      return true;
    }
    case ExprKind::Load: return load(node, a);
    case ExprKind::Call: {
      for (int k = 0; k < node.argCount; ++k)
        if (!eval(node.args[k], a))
          return false;
      auto fn = static_cast<Intrinsic>(node.op);
      const Scalar *cols[3] = {};
      for (int k = 0; k < node.argCount; ++k)
        cols[k] = column(node.args[k]);
      Scalar *out = output(node);
      Scalar args[3];
      for (int l = 0; l < lanes; ++l)
        for (int32_t i = 0; i < a.count; ++i) {
          size_t at = l * T + static_cast<size_t>(a.ids[i]);
          for (int k = 0; k < node.argCount; ++k)
            args[k] = cols[k][at];
          out[at] = intrinsicLane(fn, node.operandDtype, args);
        }
      return true;
    }
    case ExprKind::Broadcast: {
      if (!eval(node.args[0], a))
        return false;
      const Scalar *x = column(node.args[0]);
      Scalar *out = output(node);
      for (int l = 0; l < lanes; ++l)
        for (int32_t i = 0; i < a.count; ++i) {
          size_t t = static_cast<size_t>(a.ids[i]);
          out[l * T + t] = x[t];
        }
      return true;
    }
    case ExprKind::Shuffle: return shuffle(node, a);
    }
    KILN_UNREACHABLE("expression kind");
  }

  /// Every warp with an active thread must be whole and fully active.
  bool checkWholeWarps(Active a, std::string_view what) {
    return checkWholeGroups(a, what, kWarpSize, "warp");
  }

  /// Every group of `size` consecutive threads (a warp, a warpgroup) with an active thread
  /// must be whole and fully active.
  bool checkWholeGroups(Active a, std::string_view what, int32_t size, std::string_view group) {
    int32_t i = 0;
    while (i < a.count) {
      int32_t warp = a.ids[i] / size;
      int32_t warpBegin = warp * size;
      int32_t warpEnd = std::min(warpBegin + size, threads_);
      if (warpEnd - warpBegin < size)
        return raise(fmt::format("{} in {} {} of block {}, which has only {} threads (the "
                                 "block's {} threads are not a multiple of {})",
                                 what, group, warp, blockText(), warpEnd - warpBegin, threads_,
                                 size));
      int32_t j = i;
      int32_t expected = warpBegin;
      int32_t missing = -1;
      while (j < a.count && a.ids[j] < warpEnd) {
        if (missing < 0 && a.ids[j] != expected)
          missing = expected;
        ++expected;
        ++j;
      }
      if (missing < 0 && expected < warpEnd)
        missing = expected;
      if (missing >= 0)
        return raise(fmt::format("{} reached by {} of {} {} of {} {} of block {}; thread {} "
                                 "(lane {}) did not reach it",
                                 what, j - i, size, size == kWarpSize ? "lanes" : "threads",
                                 group, warp, blockText(), threadText(missing),
                                 missing % kWarpSize));
      i = j;
    }
    return true;
  }

  bool shuffle(const SimExpr &node, Active a) {
    if (!checkWholeWarps(a, fmt::format("a {} shuffle", shuffleModeName(
                                                              static_cast<ShuffleMode>(node.op)))))
      return false;
    if (!eval(node.args[0], a) || !eval(node.args[1], a))
      return false;
    stats_.shuffles += a.count / kWarpSize;
    const Scalar *value = column(node.args[0]), *laneArg = column(node.args[1]);
    Scalar *out = output(node);
    auto mode = static_cast<ShuffleMode>(node.op);
    for (int32_t i = 0; i < a.count; ++i) {
      int64_t t = a.ids[i];
      int64_t lane = t % kWarpSize, arg = laneArg[t].i, source = lane;
      switch (mode) {
      case ShuffleMode::Xor: source = lane ^ arg; break;
      case ShuffleMode::Down: source = lane + arg; break;
      case ShuffleMode::Up: source = lane - arg; break;
      case ShuffleMode::Idx: source = arg & (kWarpSize - 1); break;
      }
      if (source < 0 || source >= kWarpSize)
        source = lane; // out of the warp: the thread keeps its own value
      out[t] = value[t - lane + source];
    }
    return true;
  }

  // ---- Memory ---------------------------------------------------------------------------------

  SimMemory *memoryOf(int buffer) {
    SimMemory &memory = memories_[static_cast<size_t>(buffer)];
    if (!memory.bound) {
      raise(fmt::format("buffer {} is neither a parameter nor allocated here",
                        memory.buffer->name));
      return nullptr;
    }
    return &memory;
  }

  bool outOfBounds(const SimMemory &memory, int64_t first, int lane, int lanes,
                   std::string_view access, int64_t thread) {
    return raise(fmt::format("{} {}",
                             outOfBoundsText(access, memory.buffer->name, memory.size, first,
                                             lane, lanes),
                             byThread(thread)));
  }

  /// Checks that thread `t`'s access of `lanes` elements at `first` with
  /// `mask` is in bounds and, for vector accesses of global and shared memory,
  /// aligned to its lane count.
  bool checkAccess(const SimMemory &memory, int64_t first, int lanes, const Scalar *mask,
                   bool wideMask, size_t t, std::string_view access) {
    bool anyActive = false;
    for (int l = 0; l < lanes; ++l) {
      if (mask && mask[wideMask ? l * T() + t : t].i == 0)
        continue;
      anyActive = true;
      if (first < 0 || first >= memory.size || l >= memory.size - first)
        return outOfBounds(memory, first, l, lanes, access, static_cast<int64_t>(t));
    }
    if (anyActive && lanes > 1 && !memory.perThread && first % lanes != 0)
      return raise(fmt::format("misaligned {}-lane {} {}[{}] {}: a vector access of {} memory "
                               "must start at a multiple of {}",
                               lanes, access, memory.buffer->name, first,
                               byThread(static_cast<int64_t>(t)),
                               memScopeName(memory.buffer->scope), lanes));
    return true;
  }

  int64_t elementOf(const SimMemory &memory, size_t t, int64_t index) const {
    return memory.perThread ? static_cast<int64_t>(t) * memory.size + index : index;
  }

  bool raceError(const SimMemory &memory, int64_t element, const SharedRace &race, size_t t,
                 std::string_view access) {
    return raise(raceText(memory.buffer->name, element, race, access,
                          threadText(static_cast<int64_t>(t)), threadText(race.otherThread),
                          blockText()));
  }

  bool load(const SimExpr &node, Active a) {
    SimMemory *memory = memoryOf(node.buffer);
    if (!memory || !eval(node.args[0], a))
      return false;
    const Scalar *mask = nullptr;
    bool wideMask = false;
    if (node.args[1] != kNoNode) {
      if (!eval(node.args[1], a))
        return false;
      mask = column(node.args[1]);
      wideMask = program_.exprs[static_cast<size_t>(node.args[1])].type.lanes != 1;
    }
    const Scalar *index = column(node.args[0]);
    Scalar *out = output(node);
    const int lanes = node.type.lanes;
    const DType dtype = node.type.dtype;
    const size_t T = this->T();
    const bool global = memory->buffer->scope == MemScope::Global;
    const bool shared = memory->buffer->scope == MemScope::Shared;
    for (int32_t i = 0; i < a.count; ++i) {
      size_t t = static_cast<size_t>(a.ids[i]);
      int64_t first = index[t].i;
      if (!checkAccess(*memory, first, lanes, mask, wideMask, t, "load"))
        return false;
      for (int l = 0; l < lanes; ++l) {
        size_t at = l * T + t;
        if (mask && mask[wideMask ? at : t].i == 0) {
          out[at] = Scalar{};
          continue;
        }
        int64_t element = elementOf(*memory, t, first + l);
        if (!memory->inFlight.empty() && memory->inFlight[static_cast<size_t>(element)] != 0)
          return inFlightError(*memory, element, t, "read");
        if (memory->trackWrites && !memory->written[static_cast<size_t>(element)])
          return raise(fmt::format("read of {} {}[{}], which no thread has written, {}",
                                   memScopeName(memory->buffer->scope), memory->buffer->name,
                                   first + l, byThread(static_cast<int64_t>(t))));
        if (memory->trackRaces)
          if (auto race = memory->races.read(element, static_cast<int64_t>(t), epoch_))
            return raceError(*memory, element, *race, t, "read");
        out[at] = loadElement(memory->data + element * memory->elementBytes, dtype);
        stats_.globalLoads += global;
        stats_.sharedLoads += shared;
      }
    }
    return true;
  }

  bool store(const SimStmt &node, Active a) {
    SimMemory *memory = memoryOf(node.buffer);
    if (!memory || !eval(node.exprs[0], a) || !eval(node.exprs[1], a))
      return false;
    const Scalar *mask = nullptr;
    bool wideMask = false;
    if (node.exprs[2] != kNoNode) {
      if (!eval(node.exprs[2], a))
        return false;
      mask = column(node.exprs[2]);
      wideMask = program_.exprs[static_cast<size_t>(node.exprs[2])].type.lanes != 1;
    }
    const Scalar *index = column(node.exprs[0]);
    const Scalar *value = column(node.exprs[1]);
    const int lanes = program_.exprs[static_cast<size_t>(node.exprs[1])].type.lanes;
    const DType dtype = memory->buffer->dtype;
    const size_t T = this->T();
    const bool global = memory->buffer->scope == MemScope::Global;
    const bool shared = memory->buffer->scope == MemScope::Shared;
    for (int32_t i = 0; i < a.count; ++i) {
      size_t t = static_cast<size_t>(a.ids[i]);
      int64_t first = index[t].i;
      if (!checkAccess(*memory, first, lanes, mask, wideMask, t, "store"))
        return false;
      for (int l = 0; l < lanes; ++l) {
        size_t at = l * T + t;
        if (mask && mask[wideMask ? at : t].i == 0)
          continue;
        int64_t element = elementOf(*memory, t, first + l);
        if (!memory->inFlight.empty() && memory->inFlight[static_cast<size_t>(element)] != 0)
          return inFlightError(*memory, element, t, "write");
        if (!checkNoWgmmaReader(*memory, element, t, "write"))
          return false;
        if (memory->trackRaces)
          if (auto race = memory->races.write(element, static_cast<int64_t>(t), epoch_))
            return raceError(*memory, element, *race, t, "write");
        if (memory->trackWrites)
          memory->written[static_cast<size_t>(element)] = 1;
        noteGenericWrite(*memory, element, static_cast<int32_t>(t));
        storeElement(memory->data + element * memory->elementBytes, dtype, value[at]);
        stats_.globalStores += global;
        stats_.sharedStores += shared;
      }
    }
    return true;
  }

  bool atomic(const SimStmt &node, Active a) {
    SimMemory *memory = memoryOf(node.buffer);
    if (!memory || !eval(node.exprs[0], a) || !eval(node.exprs[1], a))
      return false;
    const Scalar *index = column(node.exprs[0]);
    const Scalar *value = column(node.exprs[1]);
    const DType dtype = memory->buffer->dtype;
    BinaryOp op = BinaryOp::Add;
    switch (static_cast<AtomicOp>(node.op)) {
    case AtomicOp::Add: op = BinaryOp::Add; break;
    case AtomicOp::Max: op = BinaryOp::Max; break;
    case AtomicOp::Min: op = BinaryOp::Min; break;
    }
    const bool global = memory->buffer->scope == MemScope::Global;
    // Threads' updates land in linear thread order.
    for (int32_t i = 0; i < a.count; ++i) {
      size_t t = static_cast<size_t>(a.ids[i]);
      int64_t element = index[t].i;
      if (!checkAccess(*memory, element, 1, nullptr, false, t, "atomic"))
        return false;
      if (!memory->inFlight.empty() && memory->inFlight[static_cast<size_t>(element)] != 0)
        return inFlightError(*memory, element, t, "atomic update");
      if (!checkNoWgmmaReader(*memory, element, t, "atomic update"))
        return false;
      if (memory->trackWrites && !memory->written[static_cast<size_t>(element)])
        return raise(fmt::format("atomic {} on {} {}[{}], which no thread has written, {}",
                                 atomicOpName(static_cast<AtomicOp>(node.op)),
                                 memScopeName(memory->buffer->scope), memory->buffer->name,
                                 element, byThread(static_cast<int64_t>(t))));
      if (memory->trackRaces)
        if (auto race = memory->races.atomic(element, static_cast<int64_t>(t), epoch_))
          return raceError(*memory, element, *race, t, "atomic");
      std::byte *at = memory->data + element * memory->elementBytes;
      noteGenericWrite(*memory, element, static_cast<int32_t>(t));
      storeElement(at, dtype, binaryLane(op, dtype, loadElement(at, dtype), value[t]));
      stats_.globalStores += global;
      stats_.sharedStores += !global;
      ++stats_.atomics;
    }
    return true;
  }

  // ---- Statements -----------------------------------------------------------------------------

  bool exec(int s, Active a) {
    if (s == kNoNode || a.count == 0)
      return true;
    if (++steps_ > options_.maxStepsPerBlock)
      return raise(fmt::format("block {} ran more than {} statements (SimOptions::"
                               "maxStepsPerBlock): a runaway loop?",
                               blockText(), options_.maxStepsPerBlock));
    ++stats_.statements;
    stats_.threadStatements += a.count;
    const SimStmt &node = program_.stmts[static_cast<size_t>(s)];
    switch (node.kind) {
    case StmtKind::Block:
      for (int child : node.children)
        if (!exec(child, a))
          return false;
      return true;
    case StmtKind::For:
      if (isBlockLoop(node.loopKind))
        return blockLoop(node, a);
      if (isThreadLoop(node.loopKind))
        return threadLoop(node, a);
      return threadSerialLoop(node, a);
    case StmtKind::Let:
      if (!eval(node.exprs[0], a))
        return false;
      return bind(node.var, column(node.exprs[0]), a,
                  [&](Scalar *) { return exec(node.body, a); });
    case StmtKind::If: return branch(node, a);
    case StmtKind::Allocate: return allocate(node, a);
    case StmtKind::Store: return store(node, a);
    case StmtKind::Evaluate: return eval(node.exprs[0], a);
    case StmtKind::Barrier: return barrier(a);
    case StmtKind::Atomic: return atomic(node, a);
    case StmtKind::Mma: return mma(node, a);
    case StmtKind::LdMatrix: return ldMatrix(node, a);
    case StmtKind::AsyncCopy: return asyncCopy(node, a);
    case StmtKind::AsyncCommit:
      for (int32_t i = 0; i < a.count; ++i)
        asyncCopies_.commit(a.ids[i]);
      return true;
    case StmtKind::AsyncWait: return asyncWait(node, a);
    case StmtKind::Wgmma: return wgmma(node, a);
    case StmtKind::WgmmaSync: return wgmmaSync(node, a);
    case StmtKind::Mbarrier: return mbarrier(node, a);
    case StmtKind::TmaLoad: return tmaLoad(node, a);
    }
    KILN_UNREACHABLE("statement kind");
  }

  /// Binds `var` for the threads of `a` to `value` (a column) while `body`
  /// runs; a shadowed outer binding is restored afterwards.
  template <typename Body> bool bind(int var, const Scalar *value, Active a, Body body) {
    const size_t T = this->T();
    const int lanes = program_.vars[static_cast<size_t>(var)].lanes;
    Scalar *storage = varValues_.data() + static_cast<size_t>(program_.varOffsets[var]) * T;
    std::vector<Scalar> saved;
    const bool wasBound = varBound_[static_cast<size_t>(var)] != 0;
    // Only the active threads' values: another fiber's threads may hold their own binding.
    if (wasBound)
      for (int l = 0; l < lanes; ++l)
        for (int32_t i = 0; i < a.count; ++i)
          saved.push_back(storage[l * T + static_cast<size_t>(a.ids[i])]);
    if (value)
      for (int l = 0; l < lanes; ++l)
        for (int32_t i = 0; i < a.count; ++i) {
          size_t at = l * T + static_cast<size_t>(a.ids[i]);
          storage[at] = value[at];
        }
    ++varBound_[static_cast<size_t>(var)];
    bool ok = body(storage);
    --varBound_[static_cast<size_t>(var)];
    if (wasBound) {
      size_t next = 0;
      for (int l = 0; l < lanes; ++l)
        for (int32_t i = 0; i < a.count; ++i)
          storage[l * T + static_cast<size_t>(a.ids[i])] = saved[next++];
    }
    return ok;
  }

  /// A block.* loop: each iteration is one block (or a slice of the grid).
  bool blockLoop(const SimStmt &node, Active a) {
    if (!eval(node.exprs[0], a) || !eval(node.exprs[1], a))
      return false;
    int64_t begin = column(node.exprs[0])[0].i, extent = column(node.exprs[1])[0].i;
    int axis = axisOf(node.loopKind);
    return bind(node.var, nullptr, a, [&](Scalar *storage) {
      for (int64_t i = 0; i < extent; ++i) {
        blockCoord_[static_cast<size_t>(axis)] = begin + i;
        std::fill_n(storage, T(), Scalar::ofInt(begin + i));
        if (!exec(node.body, a))
          return false;
      }
      blockCoord_[static_cast<size_t>(axis)] = 0;
      return true;
    });
  }

  /// A thread.* loop: binds each thread's coordinate; the outermost one starts a block.
  bool threadLoop(const SimStmt &node, Active a) {
    int axis = axisOf(node.loopKind);
    bool startsBlock = !insideThreads_;
    if (startsBlock) {
      insideThreads_ = true;
      steps_ = 0;
      ++epoch_;
      ++stats_.blocks;
      // Shared memory is per block wherever its allocation sits (even around
      // the block loops): each block starts with it poisoned and unwritten.
      for (SimMemory &memory : memories_)
        if (memory.bound && memory.buffer->scope == MemScope::Shared)
          resetAllocation(memory);
      if (program_.hasAsyncCopies)
        asyncCopies_.reset(threads_);
      if (program_.hasMbarriers)
        mbarriers_.reset();
      if (program_.hasWgmma) {
        wgmmas_.reset((threads_ + kWarpgroupThreads - 1) / kWarpgroupThreads);
        sharedFences_.assign(static_cast<size_t>(threads_), 0);
        accumulatorFences_.assign(static_cast<size_t>(threads_), 0);
      }
    }
    int64_t bx = launch_.block[0], by = launch_.block[1];
    bool ok = bind(node.var, nullptr, a, [&](Scalar *storage) {
      for (int32_t i = 0; i < a.count; ++i) {
        int64_t t = a.ids[i];
        int64_t coord = axis == 0 ? t % bx : axis == 1 ? (t / bx) % by : t / (bx * by);
        storage[t] = Scalar::ofInt(coord);
      }
      return exec(node.body, a);
    });
    if (startsBlock) {
      insideThreads_ = false;
      ok = ok && checkCopiesLanded() && checkBulkCopiesLanded() &&
           (!program_.hasWgmma || checkWgmmasRetired());
    }
    return ok;
  }

  /// A loop inside the thread nest: each thread has its own bounds; the loop
  /// runs while any thread has iterations left, with the others masked off.
  bool threadSerialLoop(const SimStmt &node, Active a) {
    if (!eval(node.exprs[0], a) || !eval(node.exprs[1], a))
      return false;
    const Scalar *beginColumn = column(node.exprs[0]), *extentColumn = column(node.exprs[1]);
    const Var &var = *program_.vars[static_cast<size_t>(node.var)].var;
    // Copy the bounds: the body may re-evaluate the same expression nodes.
    int64_t *begins = stacks_->bounds.data() + stacks_->boundsTop;
    int64_t *extents = begins + a.count;
    bool uniform = true;
    int64_t maxExtent = 0;
    for (int32_t i = 0; i < a.count; ++i) {
      size_t t = static_cast<size_t>(a.ids[i]);
      begins[i] = beginColumn[t].i;
      extents[i] = extentColumn[t].i;
      if (extents[i] > 0 && begins[i] > std::numeric_limits<int64_t>::max() - extents[i])
        return raise(fmt::format("loop {} in [{}, {} + {}) overflows i64 {}", var.name, begins[i],
                                 begins[i], extents[i], byThread(static_cast<int64_t>(t))));
      uniform = uniform && begins[i] == begins[0] && extents[i] == extents[0];
      maxExtent = std::max(maxExtent, extents[i]);
    }
    stacks_->boundsTop += 2 * static_cast<size_t>(a.count);
    int32_t *live = stacks_->arena.data() + stacks_->arenaTop;
    stacks_->arenaTop += static_cast<size_t>(a.count);
    // live[] holds positions in `a` of the threads that still iterate.
    int32_t *ids = live; // reused below as the active list of each iteration
    std::vector<int32_t> positions;
    bool ok = bind(node.var, nullptr, a, [&](Scalar *storage) {
      if (uniform) {
        for (int64_t k = 0; k < maxExtent; ++k) {
          Scalar value = Scalar::ofInt(begins[0] + k);
          for (int32_t i = 0; i < a.count; ++i)
            storage[a.ids[i]] = value;
          if (!exec(node.body, a))
            return false;
        }
        return true;
      }
      positions.resize(static_cast<size_t>(a.count));
      int32_t count = 0;
      for (int32_t i = 0; i < a.count; ++i)
        if (extents[i] > 0)
          positions[static_cast<size_t>(count++)] = i;
      for (int64_t k = 0; count > 0; ++k) {
        int32_t kept = 0;
        for (int32_t p = 0; p < count; ++p) {
          int32_t i = positions[static_cast<size_t>(p)];
          if (k < extents[i]) {
            positions[static_cast<size_t>(kept++)] = i;
            ids[kept - 1] = a.ids[i];
            storage[a.ids[i]] = Scalar::ofInt(begins[i] + k);
          }
        }
        count = kept;
        if (count > 0 && !exec(node.body, Active{ids, count}))
          return false;
      }
      return true;
    });
    stacks_->arenaTop -= static_cast<size_t>(a.count);
    stacks_->boundsTop -= 2 * static_cast<size_t>(a.count);
    return ok;
  }

  bool branch(const SimStmt &node, Active a) {
    if (!eval(node.exprs[0], a))
      return false;
    const Scalar *cond = column(node.exprs[0]);
    int32_t *thenIds = stacks_->arena.data() + stacks_->arenaTop;
    int32_t thenCount = 0, elseCount = 0;
    // Else-threads fill the same region from its end, in reverse; reversed back below.
    int32_t *elseEnd = thenIds + a.count;
    for (int32_t i = 0; i < a.count; ++i) {
      int32_t t = a.ids[i];
      if (cond[t].i != 0)
        thenIds[thenCount++] = t;
      else
        *(elseEnd - ++elseCount) = t;
    }
    int32_t *elseIds = elseEnd - elseCount;
    std::reverse(elseIds, elseEnd);
    stacks_->arenaTop += static_cast<size_t>(a.count);
    bool ok = node.forks && thenCount > 0 && elseCount > 0
                  ? forkBranch(node, Active{thenIds, thenCount}, Active{elseIds, elseCount})
                  : (thenCount == 0 || exec(node.body, Active{thenIds, thenCount})) &&
                        (elseCount == 0 || exec(node.elseBody, Active{elseIds, elseCount}));
    stacks_->arenaTop -= static_cast<size_t>(a.count);
    return ok;
  }

  /// Runs the else side of a branch that waits on mbarriers as a fiber of its own beside the
  /// then side, so that each may wait for what the other does (a producer and its consumers).
  bool forkBranch(const SimStmt &node, Active thenSide, Active elseSide) {
    auto childStacks = std::make_unique<Stacks>();
    childStacks->allocate(T(), program_.maxDepth);
    bool childOk = true;
    Stacks *mine = stacks_;
    const int child = fibers_.spawn([&] {
      stacks_ = childStacks.get();
      childOk = exec(node.elseBody, elseSide);
    });
    ++stats_.forkedBranches;
    bool ok = exec(node.body, thenSide);
    ok = fibers_.join(child) && ok;
    stacks_ = mine;
    if (fibers_.deadlocked() && !error_)
      return raise("deadlock: " + fibers_.deadlockReport());
    return ok && childOk;
  }

  bool barrier(Active a) {
    if (a.count != threads_) {
      int32_t missing = a.count;
      for (int32_t i = 0; i < a.count; ++i)
        if (a.ids[i] != i) {
          missing = i;
          break;
        }
      return raise(fmt::format("barrier reached by {} of {} threads of block {}; thread {} did "
                               "not reach it",
                               a.count, threads_, blockText(), threadText(missing)));
    }
    ++stats_.barriers;
    ++epoch_;
    return true;
  }

  bool allocate(const SimStmt &node, Active a) {
    SimMemory &memory = memories_[static_cast<size_t>(node.buffer)];
    const Buffer &buffer = *memory.buffer;
    if (memory.bound)
      return raise(fmt::format("buffer {} is allocated again inside its own allocation",
                               buffer.name));
    const bool shared = buffer.scope == MemScope::Shared;
    const int64_t copies = shared ? 1 : threads_;
    constexpr int64_t kMaxBytes = int64_t{1} << 30;
    if (buffer.size < 0 || buffer.size > kMaxBytes / memory.elementBytes / copies)
      return raise(fmt::format("allocation {}: {}[{}] {} exceeds the simulator's {} byte limit",
                               buffer.name, dtypeName(buffer.dtype), buffer.size,
                               shared ? "per block" : "per thread", kMaxBytes),
                   ErrorCode::OutOfMemory);
    size_t elements = static_cast<size_t>(buffer.size * copies);
    try {
      const SimBuffer &info = program_.buffers[static_cast<size_t>(node.buffer)];
      memory.trackRaces = shared && options_.checkSharedRaces;
      memory.storage.resize(elements * static_cast<size_t>(memory.elementBytes));
      memory.written.resize(elements);
      if (info.asyncDestination || info.tmaDestination)
        memory.inFlight.resize(elements);
      if (info.mbarriers)
        memory.mbarriers.resize(elements);
      if (info.wgmmaOperand || info.wgmmaAccumulator) {
        memory.fencesAtWrite.resize(elements);
        memory.writer.resize(elements);
      }
      resetAllocation(memory);
    } catch (const std::bad_alloc &) {
      return raise(fmt::format("allocation {}: out of memory for {}[{}]", buffer.name,
                               dtypeName(buffer.dtype), buffer.size),
                   ErrorCode::OutOfMemory);
    }
    memory.data = memory.storage.data();
    memory.size = buffer.size;
    memory.perThread = !shared;
    memory.trackWrites = true;
    memory.bound = true;
    bool ok = exec(node.body, a);
    memory.bound = false;
    memory.data = nullptr;
    return ok;
  }

  // ---- Tensor cores and asynchronous copies ---------------------------------------------------

  bool inFlightError(const SimMemory &memory, int64_t element, size_t t, std::string_view access) {
    const int buffer = static_cast<int>(&memory - memories_.data());
    if (const PendingTma *copy = mbarriers_.writerOf(buffer, element))
      return raise(fmt::format("{} of shared {}[{}] {} while a bulk tensor copy into it is in "
                               "flight (issued by thread {}; it lands for a wait on mbarrier "
                               "{}[{}])",
                               access, memory.buffer->name, element,
                               byThread(static_cast<int64_t>(t)), threadText(copy->issuer),
                               memories_[static_cast<size_t>(copy->barrierBuffer)].buffer->name,
                               copy->barrier));
    int32_t issuer = 0;
    asyncCopies_.findWriter(static_cast<int>(&memory - memories_.data()), element, issuer);
    return raise(fmt::format("{} of shared {}[{}] {} while an async copy into it is in flight "
                             "(issued by thread {}, not yet retired by an async wait)",
                             access, memory.buffer->name, element,
                             byThread(static_cast<int64_t>(t)), threadText(issuer)));
  }

  /// Reads `count` values of fragment `f` for the 32 lanes of the warp that
  /// starts at thread `warpBase`, lane-major into `out`.
  bool readFragment(const SimFragment &f, int count, int32_t warpBase, std::string_view what,
                    std::string_view operand, std::span<double> out) {
    SimMemory *memory = memoryOf(f.buffer);
    if (!memory)
      return false;
    const DType dtype = memory->buffer->dtype;
    for (int lane = 0; lane < kWarpSize; ++lane) {
      size_t t = static_cast<size_t>(warpBase + lane);
      for (int e = 0; e < count; ++e) {
        int64_t element = elementOf(*memory, t, f.offset + e);
        if (!memory->written[static_cast<size_t>(element)])
          return raise(fmt::format("read of register {}[{}], which no thread has written, {} "
                                   "({} operand {})",
                                   memory->buffer->name, f.offset + e,
                                   byThread(static_cast<int64_t>(t)), what, operand));
        out[static_cast<size_t>(lane * count + e)] =
            loadElement(memory->data + element * memory->elementBytes, dtype).f;
      }
    }
    return true;
  }

  bool mma(const SimStmt &node, Active a) {
    const auto kind = static_cast<MmaKind>(node.op);
    const MmaShapeInfo &info = mmaShapeInfo(kind);
    const std::string what = fmt::format("mma.{}", mmaKindName(kind));
    if (!checkWholeWarps(a, what))
      return false;
    SimMemory *d = memoryOf(node.fragments[0].buffer);
    if (!d)
      return false;
    const size_t aCount = static_cast<size_t>(kWarpSize * info.aElements);
    const size_t bCount = static_cast<size_t>(kWarpSize * info.bElements);
    const size_t cCount = static_cast<size_t>(kWarpSize * info.cElements);
    std::array<double, 16 * 32> aValues;  // the largest fragments: m16 x k32,
    std::array<double, 32 * 8> bValues;   // k32 x n8,
    std::array<double, 16 * 8> cValues;   // m16 x n8
    std::array<float, 16 * 8> cFloats, dFloats;
    KILN_CHECK(aCount <= aValues.size() && bCount <= bValues.size() && cCount <= cFloats.size(),
               "mma fragment sizes");
    for (int32_t i = 0; i < a.count; i += kWarpSize) {
      const int32_t base = a.ids[i];
      // Every operand is read before d is written: d may alias c.
      if (!readFragment(node.fragments[1], info.aElements, base, what, "a",
                        std::span(aValues).first(aCount)) ||
          !readFragment(node.fragments[2], info.bElements, base, what, "b",
                        std::span(bValues).first(bCount)) ||
          !readFragment(node.fragments[3], info.cElements, base, what, "c",
                        std::span(cValues).first(cCount)))
        return false;
      for (size_t v = 0; v < cCount; ++v)
        cFloats[v] = static_cast<float>(cValues[v]);
      warpMma(kind, std::span(aValues).first(aCount), std::span(bValues).first(bCount),
              std::span(cFloats).first(cCount), std::span(dFloats).first(cCount));
      const SimFragment &out = node.fragments[0];
      for (int lane = 0; lane < kWarpSize; ++lane)
        for (int e = 0; e < info.cElements; ++e) {
          int64_t element = elementOf(*d, static_cast<size_t>(base + lane), out.offset + e);
          d->written[static_cast<size_t>(element)] = 1;
          storeElement(d->data + element * d->elementBytes, DType::F32,
                       Scalar::ofFloat(dFloats[static_cast<size_t>(lane * info.cElements + e)]));
        }
      ++stats_.mmas;
    }
    return true;
  }

  bool ldMatrix(const SimStmt &node, Active a) {
    const int matrices = node.op;
    const std::string what =
        fmt::format("ldmatrix.x{}{}", matrices, node.transpose ? ".trans" : "");
    if (!checkWholeWarps(a, what))
      return false;
    SimMemory *source = memoryOf(node.buffer);
    SimMemory *destination = memoryOf(node.fragments[0].buffer);
    if (!source || !destination || !eval(node.exprs[0], a))
      return false;
    const Scalar *rowIndex = column(node.exprs[0]);
    const int64_t bytes = source->elementBytes;
    const int64_t offset = node.fragments[0].offset;
    const int bytesPerElement = static_cast<int>(bytes);
    const int perMatrix = ldMatrixElementsPerMatrix(bytesPerElement);
    for (int32_t i = 0; i < a.count; i += kWarpSize) {
      const int32_t base = a.ids[i];
      // Lanes 8j .. 8j+7 address the rows of matrix j: 16 bytes, 16-byte aligned.
      for (int lane = 0; lane < 8 * matrices; ++lane) {
        size_t t = static_cast<size_t>(base + lane);
        if (!checkAccess(*source, rowIndex[t].i, 16 / bytes, nullptr, false, t, "ldmatrix row"))
          return false;
      }
      for (int lane = 0; lane < kWarpSize; ++lane) {
        const size_t t = static_cast<size_t>(base + lane);
        for (int v = 0; v < perMatrix * matrices; ++v) {
          LdMatrixElement at = ldMatrixElement(bytesPerElement, node.transpose, lane, v);
          const int64_t element =
              rowIndex[static_cast<size_t>(base + 8 * at.matrix + at.position.row)].i +
              at.position.col;
          if (!source->inFlight.empty() && source->inFlight[static_cast<size_t>(element)] != 0)
            return inFlightError(*source, element, t, what + " read");
          if (!source->written[static_cast<size_t>(element)])
            return raise(fmt::format("{} read of shared {}[{}], which no thread has written, {}",
                                     what, source->buffer->name, element,
                                     byThread(static_cast<int64_t>(t))));
          if (source->trackRaces)
            if (auto race = source->races.read(element, static_cast<int64_t>(t), epoch_))
              return raceError(*source, element, *race, t, "read");
          int64_t to = elementOf(*destination, t, offset + v);
          std::memcpy(destination->data + to * bytes, source->data + element * bytes,
                      static_cast<size_t>(bytes));
          destination->written[static_cast<size_t>(to)] = 1;
          ++stats_.sharedLoads;
        }
      }
    }
    return true;
  }

  /// Issues each thread's copy: indices, predicate and the global source are
  /// read now; the shared destination is written when an AsyncWait retires it.
  bool asyncCopy(const SimStmt &node, Active a) {
    SimMemory *destination = memoryOf(node.buffer);
    SimMemory *source = memoryOf(node.source);
    if (!destination || !source || !eval(node.exprs[0], a) || !eval(node.exprs[1], a))
      return false;
    const Scalar *predicate = nullptr;
    if (node.exprs[2] != kNoNode) {
      if (!eval(node.exprs[2], a))
        return false;
      predicate = column(node.exprs[2]);
    }
    const Scalar *toIndex = column(node.exprs[0]), *fromIndex = column(node.exprs[1]);
    const int lanes = node.op;
    const size_t bytes = static_cast<size_t>(lanes * source->elementBytes);
    for (int32_t i = 0; i < a.count; ++i) {
      const size_t t = static_cast<size_t>(a.ids[i]);
      PendingCopy copy;
      copy.buffer = node.buffer;
      copy.index = toIndex[t].i;
      copy.lanes = lanes;
      copy.zeroFill = predicate && predicate[t].i == 0;
      if (!checkAccess(*destination, copy.index, lanes, nullptr, false, t, "async copy write"))
        return false;
      if (!copy.zeroFill) {
        int64_t from = fromIndex[t].i;
        if (!checkAccess(*source, from, lanes, nullptr, false, t, "async copy read"))
          return false;
        std::memcpy(copy.bytes.data(), source->data + from * source->elementBytes, bytes);
        stats_.globalLoads += lanes;
      }
      for (int l = 0; l < lanes; ++l) {
        // The copy may land any time from now: not into an operand a product may still read.
        if (!checkNoWgmmaReader(*destination, copy.index + l, t, "async copy into"))
          return false;
        ++destination->inFlight[static_cast<size_t>(copy.index + l)];
      }
      asyncCopies_.issue(a.ids[i], copy);
      ++stats_.asyncCopies;
    }
    return true;
  }

  /// Lands thread `t`'s copy: shared stores by `t` now, race-checked as such.
  bool landCopy(int32_t t, const PendingCopy &copy) {
    SimMemory *memory = memoryOf(copy.buffer);
    if (!memory)
      return false;
    for (int l = 0; l < copy.lanes; ++l) {
      const int64_t element = copy.index + l;
      --memory->inFlight[static_cast<size_t>(element)];
      if (memory->trackRaces)
        if (auto race = memory->races.write(element, t, epoch_))
          return raceError(*memory, element, *race, static_cast<size_t>(t), "write");
      memory->written[static_cast<size_t>(element)] = 1;
      noteGenericWrite(*memory, element, t);
      std::byte *to = memory->data + element * memory->elementBytes;
      if (copy.zeroFill)
        std::memset(to, 0, static_cast<size_t>(memory->elementBytes));
      else
        std::memcpy(to, copy.bytes.data() + l * memory->elementBytes,
                    static_cast<size_t>(memory->elementBytes));
      ++stats_.sharedStores;
    }
    return true;
  }

  bool asyncWait(const SimStmt &node, Active a) {
    for (int32_t i = 0; i < a.count; ++i) {
      const int32_t t = a.ids[i];
      if (!asyncCopies_.retire(t, node.op, [&](const PendingCopy &copy) {
            return landCopy(t, copy);
          }))
        return false;
    }
    return true;
  }

  // ---- Warpgroup products (wgmma) ---------------------------------------------------------

  /// Issues the product of each warpgroup of `a`: the operands' starts are read now (the same
  /// for the whole warpgroup); the operands and accumulators when a wait retires its group.
  bool wgmma(const SimStmt &node, Active a) {
    const Wgmma &product = *node.wgmma;
    const std::string what = fmt::format("wgmma.{}", wgmmaPtxShape(product.wgmmaKind, product.n));
    if (!checkWholeGroups(a, what, kWarpgroupThreads, "warpgroup"))
      return false;
    if (!memoryOf(node.buffer) || !memoryOf(node.source) || !memoryOf(node.fragments[0].buffer) ||
        !eval(node.exprs[0], a) || !eval(node.exprs[1], a))
      return false;
    const Scalar *aStart = column(node.exprs[0]), *bStart = column(node.exprs[1]);
    for (int32_t i = 0; i < a.count; i += kWarpgroupThreads) {
      const int32_t base = a.ids[i];
      for (int32_t t = base; t < base + kWarpgroupThreads; ++t)
        if (aStart[t].i != aStart[base].i || bStart[t].i != bStart[base].i)
          return raise(fmt::format("{} {} names operands other than thread {}'s (a warpgroup's "
                                   "product reads one pair of matrices)",
                                   what, byThread(t), threadText(base)));
      PendingWgmma pending;
      pending.product = &product;
      pending.aBuffer = node.buffer;
      pending.bBuffer = node.source;
      pending.dBuffer = node.fragments[0].buffer;
      const int k = wgmmaShapeInfo(product.wgmmaKind).k;
      if (!wgmmaOperandElements(node.buffer, product.a, aStart[base].i, kWgmmaM, k,
                                what + " operand a", pending.aElements) ||
          !wgmmaOperandElements(node.source, product.b, bStart[base].i, product.n, k,
                                what + " operand b", pending.bElements))
        return false;
      if (!checkWgmmaFences(node, pending, base, what))
        return false;
      for (auto [buffer, elements] : {std::pair{node.buffer, &pending.aElements},
                                      std::pair{node.source, &pending.bElements}}) {
        const SimMemory &memory = memories_[static_cast<size_t>(buffer)];
        for (int64_t element : *elements)
          if (!memory.inFlight.empty() && memory.inFlight[static_cast<size_t>(element)] != 0)
            return inFlightError(memory, element, static_cast<size_t>(base), what + " read");
      }
      for (auto [buffer, elements] : {std::pair{node.buffer, &pending.aElements},
                                      std::pair{node.source, &pending.bElements}}) {
        SimMemory &memory = memories_[static_cast<size_t>(buffer)];
        if (memory.wgmmaReaders.empty())
          memory.wgmmaReaders.assign(static_cast<size_t>(memory.size), 0);
        for (int64_t element : *elements)
          ++memory.wgmmaReaders[static_cast<size_t>(element)];
      }
      wgmmas_.issue(base / kWarpgroupThreads, std::move(pending));
    }
    return true;
  }

  bool wgmmaSync(const SimStmt &node, Active a) {
    const auto op = static_cast<WgmmaSyncOp>(node.op);
    const std::string what = fmt::format("wgmma {}", wgmmaSyncOpName(op));
    if (!checkWholeGroups(a, what, kWarpgroupThreads, "warpgroup"))
      return false;
    for (int32_t i = 0; i < a.count; ++i) {
      const size_t t = static_cast<size_t>(a.ids[i]);
      sharedFences_[t] += op == WgmmaSyncOp::SharedFence;
      accumulatorFences_[t] += op == WgmmaSyncOp::Fence;
    }
    for (int32_t i = 0; i < a.count; i += kWarpgroupThreads) {
      const int32_t group = a.ids[i] / kWarpgroupThreads;
      if (op == WgmmaSyncOp::Commit)
        wgmmas_.commit(group);
      else if (op == WgmmaSyncOp::Wait &&
               !wgmmas_.retire(group, node.pending, [&](const PendingWgmma &product) {
                 return runWgmma(group, product);
               }))
        return false;
      // Fence and SharedFence are checked where a product is issued (checkWgmmaFences).
    }
    return true;
  }

  /// The elements of `buffer` that operand `matrix` of a product starting at element `start`
  /// reads, resolved through its descriptor: out[mn * k + kk] for the `mnCount` x `k` ones.
  bool wgmmaOperandElements(int buffer, const SharedMatrix &matrix, int64_t start, int mnCount,
                            int k, std::string_view what, std::vector<int64_t> &out) {
    SimMemory *memory = memoryOf(buffer);
    if (!memory)
      return false;
    const int64_t bytes = memory->elementBytes;
    const int64_t base = launch_.sharedOffset(memory->buffer);
    const int64_t address = base + start * bytes;
    if (base < 0 || base % kWgmmaAtomBytes != 0)
      return raise(fmt::format("{} reads shared {}, which does not start at a 1024-byte boundary "
                               "of the shared layout",
                               what, memory->buffer->name));
    if (start < 0 || start >= memory->size || address % 16 != 0 || address >= (1 << 18))
      return raise(fmt::format("{} starts at {}[{}], which is outside it or not 16-byte aligned",
                               what, memory->buffer->name, start));
    WgmmaDescriptor descriptor = decodeWgmmaDescriptor(encodeWgmmaDescriptor(
        {static_cast<uint32_t>(address), static_cast<uint32_t>(matrix.leadingBytes),
         static_cast<uint32_t>(matrix.strideBytes), 0, 1}));
    out.resize(static_cast<size_t>(mnCount) * static_cast<size_t>(k));
    for (int mn = 0; mn < mnCount; ++mn)
      for (int kk = 0; kk < k; ++kk) {
        int64_t byte = int64_t(wgmmaOperandAddress(descriptor, matrix.mnMajor,
                                                   static_cast<int>(bytes), mn, kk)) - base;
        int64_t element = byte / bytes;
        if (byte < 0 || element >= memory->size)
          return raise(fmt::format("{} reads element ({}, {}) at byte {} of shared {}, outside its "
                                   "{} elements",
                                   what, mn, kk, byte, memory->buffer->name, memory->size));
        out[static_cast<size_t>(mn * k + kk)] = element;
      }
    return true;
  }

  /// Reads a retired product's operand elements (and forgets them as read by a product).
  bool readWgmmaOperand(int buffer, const std::vector<int64_t> &elements, int32_t firstThread,
                        std::string_view what, std::vector<double> &out) {
    SimMemory *memory = memoryOf(buffer);
    if (!memory)
      return false;
    out.resize(elements.size());
    for (size_t i = 0; i < elements.size(); ++i) {
      const int64_t element = elements[i];
      --memory->wgmmaReaders[static_cast<size_t>(element)];
      if (!memory->inFlight.empty() && memory->inFlight[static_cast<size_t>(element)] != 0)
        return inFlightError(*memory, element, static_cast<size_t>(firstThread), what);
      if (!memory->written[static_cast<size_t>(element)])
        return raise(fmt::format("{} read of shared {}[{}], which no thread has written, by the "
                                 "warpgroup of thread {} of block {}",
                                 what, memory->buffer->name, element, threadText(firstThread),
                                 blockText()));
      out[i] = loadElement(memory->data + element * memory->elementBytes, memory->buffer->dtype).f;
      ++stats_.sharedLoads;
    }
    return true;
  }

  /// Records a store, landed async copy or atomic by thread `t` into a wgmma operand or
  /// accumulator element: a product may use it only after a fence the thread runs later.
  void noteGenericWrite(SimMemory &memory, int64_t element, int32_t t) {
    if (memory.fencesAtWrite.empty())
      return;
    const bool shared = memory.buffer->scope == MemScope::Shared;
    memory.fencesAtWrite[static_cast<size_t>(element)] =
        shared ? sharedFences_[static_cast<size_t>(t)] : accumulatorFences_[static_cast<size_t>(t)];
    memory.writer[static_cast<size_t>(element)] = t;
  }

  /// A product reads its shared operands through the async proxy and its accumulators as the
  /// registers stood at the last wgmma_fence: every operand element a thread wrote needs that
  /// thread's wgmma_shared_fence since, and every accumulator written by a store a wgmma_fence
  /// of its thread since.
  bool checkWgmmaFences(const SimStmt &node, const PendingWgmma &pending, int32_t first,
                        const std::string &what) {
    for (auto [buffer, elements] : {std::pair{node.buffer, &pending.aElements},
                                    std::pair{node.source, &pending.bElements}}) {
      const SimMemory &memory = memories_[static_cast<size_t>(buffer)];
      for (int64_t element : *elements) {
        const int32_t writer = memory.writer[static_cast<size_t>(element)];
        if (writer >= 0 && memory.fencesAtWrite[static_cast<size_t>(element)] ==
                               sharedFences_[static_cast<size_t>(writer)])
          return raise(fmt::format("{} of the warpgroup of thread {} of block {} reads shared "
                                   "{}[{}], which thread {} wrote with no wgmma_shared_fence "
                                   "(fence.proxy.async) after it",
                                   what, threadText(first), blockText(), memory.buffer->name,
                                   element, threadText(writer)));
      }
    }
    const SimMemory &d = memories_[static_cast<size_t>(node.fragments[0].buffer)];
    for (int32_t t = first; t < first + kWarpgroupThreads; ++t)
      for (int e = 0; e < node.wgmma->n / 2; ++e) {
        int64_t element = elementOf(d, static_cast<size_t>(t), node.fragments[0].offset + e);
        if (d.fencesAtWrite[static_cast<size_t>(element)] ==
            accumulatorFences_[static_cast<size_t>(t)])
          return raise(fmt::format("{} {} accumulates into register {}[{}], stored to with no "
                                   "wgmma_fence after it",
                                   what, byThread(t), d.buffer->name,
                                   node.fragments[0].offset + e));
      }
    return true;
  }

  /// A write of `element` while an issued, unretired product may still read it.
  bool checkNoWgmmaReader(const SimMemory &memory, int64_t element, size_t t,
                          std::string_view access) {
    if (memory.wgmmaReaders.empty() || memory.wgmmaReaders[static_cast<size_t>(element)] == 0)
      return true;
    return raise(fmt::format("{} shared {}[{}] {} while a wgmma reading it is in flight (not yet "
                             "retired by a wgmma wait)",
                             access, memory.buffer->name, element,
                             byThread(static_cast<int64_t>(t))));
  }

  /// Runs a retired product of warpgroup `group`: D = A x B (+ D) into its threads' registers.
  bool runWgmma(int32_t group, const PendingWgmma &pending) {
    const Wgmma &product = *pending.product;
    const int n = product.n, k = wgmmaShapeInfo(product.wgmmaKind).k;
    const std::string what = fmt::format("wgmma.{}", wgmmaPtxShape(product.wgmmaKind, n));
    const int32_t first = group * kWarpgroupThreads;
    std::vector<double> aValues, bTransposed;
    if (!readWgmmaOperand(pending.aBuffer, pending.aElements, first, what + " operand a",
                          aValues) ||
        !readWgmmaOperand(pending.bBuffer, pending.bElements, first, what + " operand b",
                          bTransposed))
      return false;
    std::vector<double> bValues(static_cast<size_t>(k) * static_cast<size_t>(n));
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p)
        bValues[static_cast<size_t>(p * n + j)] = bTransposed[static_cast<size_t>(j * k + p)];
    SimMemory *d = memoryOf(pending.dBuffer);
    if (!d)
      return false;
    std::vector<float> dValues(static_cast<size_t>(kWgmmaM) * static_cast<size_t>(n), 0.0f);
    auto slot = [&](int thread, int e) {
      MatrixPosition at = wgmmaAccumulatorPosition(thread, e);
      return static_cast<size_t>(at.row * n + at.col);
    };
    for (int thread = 0; thread < kWarpgroupThreads && product.accumulate; ++thread)
      for (int e = 0; e < n / 2; ++e) {
        const size_t t = static_cast<size_t>(first + thread);
        int64_t element = elementOf(*d, t, product.d.offset + e);
        if (!d->written[static_cast<size_t>(element)])
          return raise(fmt::format("{} accumulates into register {}[{}], which no thread has "
                                   "written, {}",
                                   what, d->buffer->name, product.d.offset + e,
                                   byThread(static_cast<int64_t>(t))));
        dValues[slot(thread, e)] =
            static_cast<float>(loadElement(d->data + element * d->elementBytes, DType::F32).f);
      }
    warpgroupMma(n, k, aValues, bValues, dValues, product.accumulate);
    for (int thread = 0; thread < kWarpgroupThreads; ++thread)
      for (int e = 0; e < n / 2; ++e) {
        const size_t t = static_cast<size_t>(first + thread);
        int64_t element = elementOf(*d, t, product.d.offset + e);
        d->written[static_cast<size_t>(element)] = 1;
        storeElement(d->data + element * d->elementBytes, DType::F32,
                     Scalar::ofFloat(dValues[slot(thread, e)]));
      }
    ++stats_.mmas;
    return true;
  }

  /// At the end of a block every product must have been retired by a wait.
  bool checkWgmmasRetired() {
    int32_t group = 0;
    const PendingWgmma *product = wgmmas_.firstInFlight(group);
    if (!product)
      return true;
    return raise(fmt::format("wgmma.{} of warpgroup {} of block {} was never waited for: {} "
                             "before the block ended",
                             wgmmaPtxShape(product->product->wgmmaKind, product->product->n),
                             group, blockText(),
                             wgmmas_.uncommitted(group, *product)
                                 ? "it was not committed (wgmma_commit) and retired (wgmma_wait)"
                                 : "no wgmma wait retired its group"));
  }

  // ---- Mbarriers and bulk tensor copies -------------------------------------------------------

  /// Thread `t`'s barrier `element` of `buffer`: in bounds, initialized, and (for another
  /// thread than the initializing one) behind a barrier since its init.
  MbarrierState *mbarrierOf(int buffer, int64_t element, size_t t, std::string_view what) {
    SimMemory *memory = memoryOf(buffer);
    if (!memory)
      return nullptr;
    if (element < 0 || element >= memory->size) {
      raise(fmt::format("{} on mbarrier {}[{}] {}: outside its {} barriers", what,
                        memory->buffer->name, element, byThread(static_cast<int64_t>(t)),
                        memory->size));
      return nullptr;
    }
    MbarrierState &state = memory->mbarriers[static_cast<size_t>(element)];
    if (!state.initialized) {
      raise(fmt::format("{} on mbarrier {}[{}] {}, which is not initialized (mbarrier_init)", what,
                        memory->buffer->name, element, byThread(static_cast<int64_t>(t))));
      return nullptr;
    }
    if (static_cast<int32_t>(t) != state.initThread && state.initEpoch == epoch_) {
      raise(fmt::format("{} on mbarrier {}[{}] {}, which thread {} initialized with no barrier "
                        "since",
                        what, memory->buffer->name, element, byThread(static_cast<int64_t>(t)),
                        threadText(state.initThread)));
      return nullptr;
    }
    return &state;
  }

  std::string barrierText(int buffer, int64_t element) const {
    return fmt::format("{}[{}]", memories_[static_cast<size_t>(buffer)].buffer->name, element);
  }

  bool mbarrier(const SimStmt &node, Active a) {
    const auto op = static_cast<MbarrierOp>(node.op);
    SimMemory *memory = memoryOf(node.buffer);
    if (!memory || !eval(node.exprs[0], a) ||
        (node.exprs[1] != kNoNode && !eval(node.exprs[1], a)))
      return false;
    const Scalar *index = column(node.exprs[0]);
    if (op == MbarrierOp::Wait)
      return mbarrierWait(node, a, index, column(node.exprs[1]));
    bool completedPhase = false;
    for (int32_t i = 0; i < a.count; ++i) {
      const size_t t = static_cast<size_t>(a.ids[i]);
      const int64_t element = index[t].i;
      if (op == MbarrierOp::Init) {
        if (element < 0 || element >= memory->size)
          return raise(fmt::format("mbarrier_init of {} {}: outside its {} barriers",
                                   barrierText(node.buffer, element),
                                   byThread(static_cast<int64_t>(t)), memory->size));
        MbarrierState &state = memory->mbarriers[static_cast<size_t>(element)];
        if (state.initialized)
          return raise(fmt::format("mbarrier {} initialized again {} (thread {} did before)",
                                   barrierText(node.buffer, element),
                                   byThread(static_cast<int64_t>(t)),
                                   threadText(state.initThread)));
        state = MbarrierState{};
        state.initialized = true;
        state.expected = state.pending = node.count;
        state.initThread = static_cast<int32_t>(t);
        state.initEpoch = epoch_;
        continue;
      }
      MbarrierState *state = mbarrierOf(node.buffer, element, t, fmt::format("mbarrier_{}",
                                                                            mbarrierOpName(op)));
      if (!state)
        return false;
      if (state->pending == 0)
        return raise(fmt::format("mbarrier_{} on {} {} is one arrival more than the {} its phase "
                                 "expects (its bytes have not all landed)",
                                 mbarrierOpName(op), barrierText(node.buffer, element),
                                 byThread(static_cast<int64_t>(t)), state->expected));
      if (op == MbarrierOp::ArriveExpectTx)
        state->tx += node.count;
      --state->pending;
      const int64_t phases = state->phases;
      state->completeIfDone();
      completedPhase = completedPhase || state->phases != phases;
    }
    if (!completedPhase)
      return true;
    // A fiber waiting for this phase runs now, before this one goes on.
    Stacks *mine = stacks_;
    const bool ok = fibers_.yield();
    stacks_ = mine;
    return ok || raise("deadlock: every fiber of the block waits for another:\n" +
                       fibers_.deadlockReport());
  }

  /// The threads of `a` wait until the phase of their parity of their barrier has completed;
  /// the copies completing on those barriers land first. Other fibers run meanwhile.
  bool mbarrierWait(const SimStmt &node, Active a, const Scalar *index, const Scalar *parity) {
    std::vector<std::pair<int64_t, int64_t>> waits; // (barrier, parity) per thread of a
    for (int32_t i = 0; i < a.count; ++i) {
      const size_t t = static_cast<size_t>(a.ids[i]);
      if (parity[t].i != 0 && parity[t].i != 1)
        return raise(fmt::format("mbarrier_wait on {} {} for parity {} (0 or 1)",
                                 barrierText(node.buffer, index[t].i),
                                 byThread(static_cast<int64_t>(t)), parity[t].i));
      if (!mbarrierOf(node.buffer, index[t].i, t, "mbarrier_wait"))
        return false;
      waits.emplace_back(index[t].i, parity[t].i);
    }
    const int buffer = node.buffer;
    auto ready = [this, buffer, &waits]() {
      for (auto [barrier, parityWanted] : waits) {
        for (const PendingTma &copy : mbarriers_.takeCopiesOn(buffer, barrier))
          if (!landTma(copy))
            return true; // the waiter finds the error
        if (!memories_[static_cast<size_t>(buffer)]
                 .mbarriers[static_cast<size_t>(barrier)]
                 .phaseDone(parityWanted))
          return false;
      }
      return true;
    };
    const std::string what =
        fmt::format("threads {} to {} of block {} wait on mbarrier {} for the phase of parity {}",
                    threadText(a.ids[0]), threadText(a.ids[a.count - 1]), blockText(),
                    barrierText(buffer, waits.front().first), waits.front().second);
    Stacks *mine = stacks_;
    const bool ok = fibers_.block(ready, what);
    stacks_ = mine;
    if (error_)
      return false;
    if (!ok)
      return raise("deadlock: every fiber of the block waits for another:\n" +
                   fibers_.deadlockReport());
    return true;
  }

  /// Issues each thread's copy of a box: read from global memory now, landing when a wait on
  /// its barrier needs it.
  bool tmaLoad(const SimStmt &node, Active a) {
    const TensorMap &map = *node.tma->map;
    SimMemory *destination = memoryOf(node.buffer);
    SimMemory *source = memoryOf(node.source);
    if (!destination || !source || !eval(node.exprs[0], a) || !eval(node.exprs[1], a))
      return false;
    for (int c : node.coords)
      if (!eval(c, a))
        return false;
    const Scalar *toIndex = column(node.exprs[0]), *barrierIndex = column(node.exprs[1]);
    const int rank = static_cast<int>(map.dims.size());
    const int64_t bytes = destination->elementBytes;
    const int64_t boxElements = tmaBoxElements(map);
    const int64_t base = launch_.sharedOffset(destination->buffer);
    for (int32_t i = 0; i < a.count; ++i) {
      const size_t t = static_cast<size_t>(a.ids[i]);
      const std::string what = fmt::format("bulk tensor copy through {} {}", map.name,
                                           byThread(static_cast<int64_t>(t)));
      if (!mbarrierOf(node.barriers, barrierIndex[t].i, t, "a bulk tensor copy completing"))
        return false;
      const int64_t first = toIndex[t].i;
      const int64_t alignment = tmaDestinationAlignment(map);
      if (base < 0 || (base + first * bytes) % alignment != 0)
        return raise(fmt::format("{} lands at shared {}[{}], not at a {}-byte boundary", what,
                                 destination->buffer->name, first, alignment));
      PendingTma copy;
      copy.buffer = node.buffer;
      copy.barrierBuffer = node.barriers;
      copy.barrier = barrierIndex[t].i;
      copy.byteCount = boxElements * bytes;
      copy.issuer = static_cast<int32_t>(t);
      copy.elements.resize(static_cast<size_t>(boxElements));
      copy.bytes.assign(static_cast<size_t>(copy.byteCount), std::byte{0});
      std::vector<int64_t> at(static_cast<size_t>(rank), 0); // the box element's coordinates
      for (int64_t linear = 0; linear < boxElements; ++linear) {
        bool inside = true;
        int64_t global = 0;
        for (int d = 0; d < rank; ++d) {
          const int64_t coord = column(node.coords[static_cast<size_t>(d)])[t].i + at[d];
          inside = inside && coord >= 0 && coord < map.dims[static_cast<size_t>(d)];
          global += coord * (d == 0 ? 1 : map.strides[static_cast<size_t>(d - 1)]);
        }
        if (inside) {
          std::memcpy(copy.bytes.data() + linear * bytes, source->data + global * bytes,
                      static_cast<size_t>(bytes));
          ++stats_.globalLoads;
        }
        const int64_t element = first + tmaBoxByte(map, linear) / bytes;
        if (element < 0 || element >= destination->size)
          return raise(fmt::format("{}: box element {} lands at shared {}[{}], outside its {} "
                                   "elements",
                                   what, linear, destination->buffer->name, element,
                                   destination->size));
        if (destination->inFlight[static_cast<size_t>(element)] != 0)
          return inFlightError(*destination, element, t, "bulk copy write");
        if (!checkNoWgmmaReader(*destination, element, t, "bulk tensor copy into"))
          return false;
        copy.elements[static_cast<size_t>(linear)] = element;
        for (int d = 0; d < rank && ++at[d] == map.box[static_cast<size_t>(d)]; ++d)
          at[d] = 0;
      }
      for (int64_t element : copy.elements)
        ++destination->inFlight[static_cast<size_t>(element)];
      mbarriers_.issue(std::move(copy));
      ++stats_.bulkCopies;
    }
    return true;
  }

  /// Lands a bulk copy: its box into shared memory (through the async proxy, so a wgmma may
  /// read it with no proxy fence), its bytes off its barrier's phase.
  bool landTma(const PendingTma &copy) {
    SimMemory &memory = memories_[static_cast<size_t>(copy.buffer)];
    for (size_t i = 0; i < copy.elements.size(); ++i) {
      const size_t element = static_cast<size_t>(copy.elements[i]);
      --memory.inFlight[element];
      memory.written[element] = 1;
      if (!memory.fencesAtWrite.empty()) {
        memory.fencesAtWrite[element] = -1;
        memory.writer[element] = -1;
      }
      std::memcpy(memory.data + copy.elements[i] * memory.elementBytes,
                  copy.bytes.data() + static_cast<int64_t>(i) * memory.elementBytes,
                  static_cast<size_t>(memory.elementBytes));
      ++stats_.sharedStores;
    }
    MbarrierState &state = memories_[static_cast<size_t>(copy.barrierBuffer)]
                               .mbarriers[static_cast<size_t>(copy.barrier)];
    state.tx -= copy.byteCount;
    if (state.tx < 0)
      return raise(fmt::format("a bulk tensor copy issued by thread {} of block {} completes {} "
                               "bytes on mbarrier {}, more than its phase expects (no "
                               "mbarrier_arrive_expect_tx for them)",
                               threadText(copy.issuer), blockText(), copy.byteCount,
                               barrierText(copy.barrierBuffer, copy.barrier)));
    state.completeIfDone();
    return true;
  }

  /// At the end of a block every bulk copy must have landed for a wait on its barrier.
  bool checkBulkCopiesLanded() {
    const PendingTma *copy = mbarriers_.firstInFlight();
    if (!copy)
      return true;
    return raise(fmt::format("a bulk tensor copy into shared {} issued by thread {} of block {} "
                             "was never waited for (no mbarrier_wait on {} saw it land) before "
                             "the block ended",
                             memories_[static_cast<size_t>(copy->buffer)].buffer->name,
                             threadText(copy->issuer), blockText(),
                             barrierText(copy->barrierBuffer, copy->barrier)));
  }

  /// At the end of a block every copy must have landed: a kernel waits for
  /// its copies (cp.async.wait_group) before it ends.
  bool checkCopiesLanded() {
    int32_t t = 0;
    const PendingCopy *copy = asyncCopies_.firstInFlight(t);
    if (!copy)
      return true;
    const SimMemory &memory = memories_[static_cast<size_t>(copy->buffer)];
    return raise(fmt::format("async copy into shared {}[{}] (and {} more elements) {} was "
                             "never waited for: {} before the block ended",
                             memory.buffer->name, copy->index, copy->lanes - 1, byThread(t),
                             asyncCopies_.uncommitted(t, *copy)
                                 ? "it was not committed (async_commit) and retired (async_wait)"
                                 : "no async wait retired its group"));
  }
};

} // namespace

Expected<SimStats> runSimtMachine(const Kernel &kernel, const SimProgram &program,
                                  const GpuLaunch &launch,
                                  std::span<const std::span<std::byte>> params,
                                  const SimOptions &options) {
  return SimtMachine(kernel, program, launch, options).run(params);
}

} // namespace kiln::sim
