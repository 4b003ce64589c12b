// The lockstep machine of the SIMT simulator: runs a compiled kernel block by block, every
// statement for all active threads of the block at once. Its core (values, expressions,
// memory, statements, errors) is SimtMachine.cpp, SimExpressions.cpp and SimMemoryAccess.cpp;
// each GPU instruction family keeps its state below and its semantics, one function per
// statement kind, in a file of its own: SimMma.cpp, SimAsyncCopy.cpp, SimWgmma.cpp, SimTma.cpp.
#pragma once

#include "ir/kernel/GpuLaunch.h"
#include "ir/kernel/Printer.h"
#include "runtime/sim/AsyncCopyQueues.h"
#include "runtime/sim/Fibers.h"
#include "runtime/sim/MbarrierTracker.h"
#include "runtime/sim/SimMemory.h"
#include "runtime/sim/SimMessages.h"
#include "runtime/sim/SimProgram.h"
#include "runtime/sim/Simulator.h"
#include "runtime/sim/WgmmaQueues.h"

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::sim {

/// Runs `program` (compiled from `kernel`, whose launch shape is `launch`) over
/// parameter memory already checked against the kernel's parameter list.
Expected<SimStats> runSimtMachine(const kir::Kernel &kernel, const SimProgram &program,
                                  const kir::GpuLaunch &launch,
                                  std::span<const std::span<std::byte>> params,
                                  const SimOptions &options);

constexpr int kWarpSize = 32;

/// The threads running a statement: ascending linear thread ids.
struct Active {
  const int32_t *ids;
  int32_t count;
};

/// Runs one launch. Its functions are grouped below by the file that defines them, each
/// instruction family with its state. Hidden, as the anonymous namespace it grew in kept it:
/// calls between its files stay direct and inlinable in the shared library.
class [[gnu::visibility("hidden")]] SimtMachine {
public:
  SimtMachine(const kir::Kernel &kernel, const SimProgram &program, const kir::GpuLaunch &launch,
              const SimOptions &options)
      : kernel_(kernel), program_(program), launch_(launch), options_(options),
        threads_(static_cast<int32_t>(launch.threadsPerBlock())) {}

  Expected<SimStats> run(std::span<const std::span<std::byte>> params);

private:
  // ---- Core state -----------------------------------------------------------------------------

  const kir::Kernel &kernel_;
  const SimProgram &program_;
  const kir::GpuLaunch &launch_;
  const SimOptions &options_;
  const int32_t threads_;
  SimStats stats_;
  std::vector<kir::Scalar> values_;    ///< (slot + lane) * threads + thread
  std::vector<kir::Scalar> varValues_; ///< (offset + lane) * threads + thread
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
  std::optional<Error> error_;
  std::array<int64_t, 3> blockCoord_{0, 0, 0};
  bool insideThreads_ = false;
  int64_t steps_ = 0;
  uint64_t epoch_ = 0; ///< barrier intervals, over the whole run

  // ---- Errors (SimtMachine.cpp) ---------------------------------------------------------------

  std::unexpected<Error> fail(std::string message,
                              ErrorCode code = ErrorCode::InvalidArgument) const;
  /// Records an error (the first one wins: fibers unwinding after it may report more).
  bool raise(std::string message, ErrorCode code = ErrorCode::InvalidArgument);
  std::string threadText(int64_t t) const { return threadCoordText(t, launch_.block); }
  std::string blockText() const { return coordText(blockCoord_); }
  std::string byThread(int64_t t) const {
    return fmt::format("by block {} thread {}", blockText(), threadText(t));
  }

  // ---- Values and expressions (SimExpressions.cpp) --------------------------------------------

  size_t T() const { return static_cast<size_t>(threads_); }
  /// Lane 0 of node `n`'s column (lane l of thread t is at [l * threads + t]).
  /// Variables are read in place, without a copy.
  const kir::Scalar *column(int n) const {
    const SimExpr &node = program_.exprs[static_cast<size_t>(n)];
    if (node.kind == kir::ExprKind::VarRef)
      return varValues_.data() + static_cast<size_t>(program_.varOffsets[node.var]) * T();
    return values_.data() + static_cast<size_t>(node.slot) * T();
  }
  kir::Scalar *output(const SimExpr &node) {
    return values_.data() + static_cast<size_t>(node.slot) * T();
  }
  bool eval(int n, Active a);
  bool shuffle(const SimExpr &node, Active a);
  /// Every warp with an active thread must be whole and fully active.
  bool checkWholeWarps(Active a, std::string_view what) {
    return checkWholeGroups(a, what, kWarpSize, "warp");
  }
  /// Every group of `size` consecutive threads (a warp, a warpgroup) with an active thread
  /// must be whole and fully active.
  bool checkWholeGroups(Active a, std::string_view what, int32_t size, std::string_view group);

  // ---- Memory (SimMemoryAccess.cpp) -----------------------------------------------------------

  SimMemory *memoryOf(int buffer);
  bool outOfBounds(const SimMemory &memory, int64_t first, int lane, int lanes,
                   std::string_view access, int64_t thread);
  inline bool checkAccess(const SimMemory &memory, int64_t first, int lanes,
                          const kir::Scalar *mask, bool wideMask, size_t t,
                          std::string_view access);
  int64_t elementOf(const SimMemory &memory, size_t t, int64_t index) const {
    return memory.perThread ? static_cast<int64_t>(t) * memory.size + index : index;
  }
  bool raceError(const SimMemory &memory, int64_t element, const SharedRace &race, size_t t,
                 std::string_view access);
  /// An access of an element an async or bulk copy has yet to land, naming its issuer.
  bool inFlightError(const SimMemory &memory, int64_t element, size_t t, std::string_view access);
  bool load(const SimExpr &node, Active a);
  bool store(const SimStmt &node, Active a);
  bool atomic(const SimStmt &node, Active a);

  // ---- Statements (SimtMachine.cpp) -----------------------------------------------------------

  bool exec(int s, Active a);
  template <typename Body> bool bind(int var, const kir::Scalar *value, Active a, Body body);
  bool blockLoop(const SimStmt &node, Active a);
  bool threadLoop(const SimStmt &node, Active a);
  bool threadSerialLoop(const SimStmt &node, Active a);
  bool branch(const SimStmt &node, Active a);
  bool forkBranch(const SimStmt &node, Active thenSide, Active elseSide);
  bool barrier(Active a);
  bool allocate(const SimStmt &node, Active a);

  // ---- Tensor-core products: mma.sync, ldmatrix (SimMma.cpp) ----------------------------------

  bool readFragment(const SimFragment &f, int count, int32_t warpBase, std::string_view what,
                    std::string_view operand, std::span<double> out);
  bool mma(const SimStmt &node, Active a);
  bool ldMatrix(const SimStmt &node, Active a);

  // ---- Asynchronous copies: cp.async (SimAsyncCopy.cpp) ---------------------------------------

  AsyncCopyQueues asyncCopies_; ///< the block's copies in flight
  bool asyncCopy(const SimStmt &node, Active a);
  bool asyncCommit(Active a);
  bool asyncWait(const SimStmt &node, Active a);
  bool landCopy(int32_t t, const PendingCopy &copy);
  bool checkCopiesLanded();

  // ---- Warpgroup products: wgmma and its ordering ops (SimWgmma.cpp) --------------------------

  WgmmaQueues wgmmas_; ///< the block's warpgroup products in flight
  /// Per thread: the wgmma_shared_fence and wgmma_fence statements it has run in this block.
  std::vector<int64_t> sharedFences_, accumulatorFences_;
  bool wgmma(const SimStmt &node, Active a);
  bool wgmmaSync(const SimStmt &node, Active a);
  bool wgmmaOperandElements(int buffer, const kir::SharedMatrix &matrix, int64_t start,
                            int mnCount, int k, std::string_view what, std::vector<int64_t> &out);
  bool readWgmmaOperand(int buffer, const std::vector<int64_t> &elements, int32_t firstThread,
                        std::string_view what, std::vector<double> &out);
  bool checkWgmmaFences(const SimStmt &node, const PendingWgmma &pending, int32_t first,
                        const std::string &what);
  bool runWgmma(int32_t group, const PendingWgmma &pending);
  bool checkWgmmasRetired();
  // Inline: every store runs these two per element.
  /// Records a store, landed async copy or atomic by thread `t` into a wgmma operand or
  /// accumulator element: a product may use it only after a fence the thread runs later.
  void noteGenericWrite(SimMemory &memory, int64_t element, int32_t t) {
    if (memory.fencesAtWrite.empty())
      return;
    const bool shared = memory.buffer->scope == kir::MemScope::Shared;
    memory.fencesAtWrite[static_cast<size_t>(element)] =
        shared ? sharedFences_[static_cast<size_t>(t)] : accumulatorFences_[static_cast<size_t>(t)];
    memory.writer[static_cast<size_t>(element)] = t;
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

  // ---- Mbarriers and bulk tensor copies (SimTma.cpp) ------------------------------------------

  MbarrierTracker mbarriers_; ///< the block's bulk copies in flight
  MbarrierState *mbarrierOf(int buffer, int64_t element, size_t t, std::string_view what);
  std::string barrierText(int buffer, int64_t element) const;
  bool mbarrier(const SimStmt &node, Active a);
  bool mbarrierWait(const SimStmt &node, Active a, const kir::Scalar *index,
                    const kir::Scalar *parity);
  bool tmaLoad(const SimStmt &node, Active a);
  bool landTma(const PendingTma &copy);
  bool checkBulkCopiesLanded();
};

/// Checks that thread `t`'s access of `lanes` elements at `first` with `mask` is in bounds
/// and, for vector accesses of global and shared memory, aligned to its lane count. Inline:
/// loads, stores and copies run it per thread.
inline bool SimtMachine::checkAccess(const SimMemory &memory, int64_t first, int lanes,
                                     const kir::Scalar *mask, bool wideMask, size_t t,
                                     std::string_view access) {
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
                             kir::memScopeName(memory.buffer->scope), lanes));
  return true;
}

} // namespace kiln::sim
