// The grid of a GPU GEMM kernel: one block per (batch, K split, M tile, N tile) on block.z (batch
// and split) / y / x, all folded into x when y or z would pass CUDA's 65535 limit. Shared by the
// CUDA-core and the tensor-core templates.
//
// Blocks start in the order of their linear index (x fastest). By default that walks the tiles
// row by row, so a wave of blocks reads a few rows of A against all of B. With `groupM` > 1 the
// tiles are visited in groups of groupM rows of tiles, column by column within a group: a wave
// then reads groupM rows of A against a few columns of B, which stays in L2.
#pragma once

#include "ir/kernel/KernelIR.h"
#include "passes/lower/GemmTemplate.h"

#include <cstdint>

namespace kiln::lower {

class GemmGrid {
public:
  /// `splits` > 1: split-K, each (batch, tile) computed by that many blocks, one per K range.
  /// `groupM` > 1: the grouped tile order above.
  GemmGrid(const GemmProblem &problem, int64_t blockM, int64_t blockN, const std::string &prefix,
           int64_t splits = 1, int64_t groupM = 1);

  /// Whether the grid has no block (an empty output).
  bool empty() const { return blocks_ == 0; }
  /// The batch index and the first row and column of the block's tile.
  const kir::ExprPtr &batch() const { return b_; }
  const kir::ExprPtr &row0() const { return i0_; }
  const kir::ExprPtr &col0() const { return j0_; }
  /// The block's K split, in [0, splits).
  const kir::ExprPtr &split() const { return split_; }
  /// `body` (the shared allocations and the thread loop) inside the block loops.
  kir::StmtPtr wrap(kir::StmtPtr body) const;
  /// `body` (a thread's work on the block's tile) for the blocks whose tile holds some of the
  /// run's rows and matrices: a symbolic batch's grid covers its largest extent, and the blocks
  /// past the run's skip their tile. The condition is the same for every thread of a block, so
  /// the tile's barriers stay uniform. `body` itself for a static problem.
  kir::StmtPtr onlyLive(const GemmProblem &problem, kir::StmtPtr body) const;

  /// A persistent kernel's view (no K split): the tiles in the order the blocks above take
  /// them, and where linear tile `t` of [0, tiles()) lies.
  struct TileAt {
    kir::ExprPtr batch, row0, col0;
  };
  int64_t tiles() const { return blocks_; }
  TileAt tileAt(const kir::ExprPtr &t) const;

private:
  /// The (M tile, N tile) of linear tile index `t` in [0, tilesM * tilesN) in the grid's order.
  std::pair<kir::ExprPtr, kir::ExprPtr> tileOf(const kir::ExprPtr &t) const;

  int64_t batch_, blockM_, blockN_, tilesM_, tilesN_, splits_, blocks_, groupM_;
  bool folded_ = false;
  kir::VarPtr bx_, by_, bz_;
  kir::ExprPtr b_, i0_, j0_, split_;
};

/// The lowering of a GEMM with an empty output (GemmGrid::empty): one idle `thread` (a launch
/// needs at least one).
GemmLowering idleGemm(const kir::VarPtr &thread);

/// `store` of output element (i, j), run only where (i, j) lies in the problem: no guard on an
/// axis the block tile divides.
kir::StmtPtr guardEdges(const GemmProblem &problem, int64_t blockM, int64_t blockN,
                        const kir::ExprPtr &i, const kir::ExprPtr &j, kir::StmtPtr store);

} // namespace kiln::lower
