// The simulator's compiled form of a kernel: flat tables of expression and
// statement nodes (children, variables and buffers as indices), built once from a kernel the
// kernel-IR verifier accepted, so the lockstep machine never allocates or hashes per operation.
#pragma once

#include "ir/kernel/FlatExpr.h"
#include "ir/kernel/KernelIR.h"
#include "ir/kernel/ScalarOps.h"
#include "support/Error.h"

#include <cstdint>
#include <vector>

namespace kiln::sim {

inline constexpr int kNoNode = kir::kNoFlatNode;

/// One expression node. Its value for thread t, lane l lives in the machine's
/// value table at (slot + l) * threads + t (a VarRef's in its variable's column).
using SimExpr = kir::FlatExpr;

/// A run of a register buffer (kir::Fragment): `buffer` is a program buffer index.
struct SimFragment {
  int buffer = kNoNode;
  int64_t offset = 0;
};

struct SimStmt {
  kir::StmtKind kind = kir::StmtKind::Block;
  kir::TargetOp target = kir::TargetOp::Mma;    ///< TargetInstr: which
  kir::ForKind loopKind = kir::ForKind::Serial; ///< For
  int var = kNoNode;                            ///< For, Let
  int buffer = kNoNode;                         ///< Allocate, Store, Atomic; LdMatrix: source;
                                                ///< AsyncCopy: destination
  int source = kNoNode;                         ///< AsyncCopy: the global source buffer
  int op = 0;                                   ///< Atomic: AtomicOp; Mma: MmaKind; LdMatrix:
                                                ///< matrices; AsyncCopy: lanes; AsyncWait:
                                                ///< pending groups
  bool transpose = false;                       ///< LdMatrix
  int pending = 0;                              ///< WgmmaSync: the Wait's pending groups
  std::shared_ptr<const kir::Wgmma> wgmma;      ///< Wgmma (buffer: a, source: b, fragments[0]:
                                                ///< d, exprs: the starts of a and b); WgmmaSync:
                                                ///< op is the WgmmaSyncOp
  int exprs[3] = {kNoNode, kNoNode, kNoNode};   ///< For: begin, extent; Let: value; If: cond;
                                                ///< Store: index, value, predicate;
                                                ///< Atomic: index, value; Evaluate: value;
                                                ///< LdMatrix: row index; AsyncCopy:
                                                ///< destination index, source index, predicate
  SimFragment fragments[4];                     ///< Mma: d, a, b, c; LdMatrix: destination
  /// Mbarrier: op is the MbarrierOp, buffer the barriers, exprs the index and parity, count
  /// the arrivals or bytes. TmaLoad: buffer the destination, source the tensor, barriers the
  /// mbarriers, exprs the destination and barrier indices, coords the coordinates.
  int64_t count = 0;
  int barriers = kNoNode;
  std::vector<int> coords;
  std::shared_ptr<const kir::TmaLoad> tma;
  bool forks = false; ///< If: a branch waits on an mbarrier, so its sides may run as fibers
  int body = kNoNode, elseBody = kNoNode;       ///< For/Let/Allocate body; If branches
  std::vector<int> children;                    ///< Block
};

struct SimVar {
  const kir::Var *var;
  int lanes;
};

struct SimBuffer {
  const kir::Buffer *buffer;
  int param = kNoNode;             ///< its kernel parameter, for global buffers
  bool asyncDestination = false;   ///< some AsyncCopy writes it
  bool wgmmaOperand = false;       ///< some Wgmma reads it (shared)
  bool wgmmaAccumulator = false;   ///< some Wgmma accumulates into it (register)
  bool tmaDestination = false;     ///< some TmaLoad writes it
  bool mbarriers = false;          ///< it holds mbarriers (shared i64)
};

/// A kernel compiled for the machine.
struct SimProgram {
  std::vector<SimExpr> exprs;
  std::vector<SimStmt> stmts;
  std::vector<SimVar> vars;
  std::vector<SimBuffer> buffers;
  int root = kNoNode;
  int totalLanes = 0;   ///< sum of the lanes of every expression node
  int totalVarLanes = 0;
  std::vector<int> varOffsets; ///< per var: its first lane in the variable table
  int maxDepth = 0;     ///< deepest nesting of ifs and loops (sizes the active-set arena)
  bool hasAsyncCopies = false; ///< any AsyncCopy, AsyncCommit or AsyncWait (the machine
                               ///< then tracks each thread's copies in flight)
  bool hasMbarriers = false;   ///< any Mbarrier or TmaLoad (the machine then tracks barrier
                               ///< phases and the bulk copies in flight)
  bool hasWgmma = false;       ///< any Wgmma or WgmmaSync (the machine then tracks each
                               ///< warpgroup's products in flight)
};

/// Compiles `kernel` after kir::verifyKernel accepts it; the errors are the verifier's
/// ("kernel <name>: ...", ErrorCode::VerifyError).
Expected<SimProgram> compileSimProgram(const kir::Kernel &kernel);

} // namespace kiln::sim
