// The lockstep machine's statements: each expression node is evaluated for every active
// thread of a block at once (a column of values per node), so interpretation costs one
// dispatch per node per statement, not per thread. Active threads are sorted lists of linear
// thread ids kept in a preallocated arena. The GPU instructions' statements run in their
// families' files (SimtMachine.h lists them).
#include "runtime/sim/SimtMachine.h"

#include "ir/kernel/WgmmaLayout.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <new>

namespace kiln::sim {

using namespace kiln::kir;

Expected<SimStats> SimtMachine::run(std::span<const std::span<std::byte>> params) {
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

std::unexpected<Error> SimtMachine::fail(std::string message, ErrorCode code) const {
  return makeError(code, fmt::format("kernel {}: {}", kernel_.name, message));
}

bool SimtMachine::raise(std::string message, ErrorCode code) {
  if (!error_)
    error_ = fail(std::move(message), code).error();
  return false;
}

bool SimtMachine::exec(int s, Active a) {
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
  case StmtKind::TargetInstr: break;
  }
  // The GPU instructions, each family in its own file.
  switch (node.target) {
  case TargetOp::Mma: return mma(node, a);                  // SimMma.cpp
  case TargetOp::LdMatrix: return ldMatrix(node, a);        // SimMma.cpp
  case TargetOp::AsyncCopy: return asyncCopy(node, a);      // SimAsyncCopy.cpp
  case TargetOp::AsyncCommit: return asyncCommit(a);        // SimAsyncCopy.cpp
  case TargetOp::AsyncWait: return asyncWait(node, a);      // SimAsyncCopy.cpp
  case TargetOp::Wgmma: return wgmma(node, a);              // SimWgmma.cpp
  case TargetOp::WgmmaSync: return wgmmaSync(node, a);      // SimWgmma.cpp
  case TargetOp::Mbarrier: return mbarrier(node, a);        // SimTma.cpp
  case TargetOp::TmaLoad: return tmaLoad(node, a);          // SimTma.cpp
  }
  KILN_UNREACHABLE("statement kind");
}

/// Binds `var` for the threads of `a` to `value` (a column) while `body`
/// runs; a shadowed outer binding is restored afterwards.
template <typename Body> bool SimtMachine::bind(int var, const Scalar *value, Active a, Body body) {
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
bool SimtMachine::blockLoop(const SimStmt &node, Active a) {
  if (!eval(node.exprs[0], a) || !eval(node.exprs[1], a))
    return false;
  int64_t begin = column(node.exprs[0])[0].i, extent = column(node.exprs[1])[0].i;
  int axis = launchAxis(node.loopKind);
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
bool SimtMachine::threadLoop(const SimStmt &node, Active a) {
  int axis = launchAxis(node.loopKind);
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
bool SimtMachine::threadSerialLoop(const SimStmt &node, Active a) {
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

bool SimtMachine::branch(const SimStmt &node, Active a) {
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
bool SimtMachine::forkBranch(const SimStmt &node, Active thenSide, Active elseSide) {
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

bool SimtMachine::barrier(Active a) {
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

bool SimtMachine::allocate(const SimStmt &node, Active a) {
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

Expected<SimStats> runSimtMachine(const Kernel &kernel, const SimProgram &program,
                                  const GpuLaunch &launch,
                                  std::span<const std::span<std::byte>> params,
                                  const SimOptions &options) {
  return SimtMachine(kernel, program, launch, options).run(params);
}

} // namespace kiln::sim
