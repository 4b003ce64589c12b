// The cp.async + mma.sync K loop of the tensor-core GEMM template (MmaGemmBuilder.h): every
// thread copies its share of each tile, a barrier per K tile, each warp loads its A and B
// fragments from the swizzled tiles (ldmatrix, or element loads) and runs mma.sync.
#include "passes/lower/gpu/MmaGemmBuilder.h"

namespace kiln::lower::tensorcore {

namespace {

// A fragment element's position in its tile as (row, column) = (g + row, t * tStep + column)
// with g = lane / 4 and t = lane % 4: read off the layout table of ir/kernel/MmaLayout.h at
// lanes 0 and 1 (every product's layout is affine in g and t so).
struct FragmentOffset {
  int64_t row = 0, column = 0, tStep = 0;
  bool tInRows = false; ///< t moves the row (B's k) rather than the column
};

FragmentOffset fragmentOffset(MmaKind kind, MmaOperand operand, int element) {
  MatrixPosition at0 = mmaFragmentPosition(kind, operand, 0, element);
  MatrixPosition at1 = mmaFragmentPosition(kind, operand, 1, element);
  bool tInRows = at1.row != at0.row;
  return {at0.row, at0.col, tInRows ? at1.row - at0.row : at1.col - at0.col, tInRows};
}

} // namespace

// Step t waits until at most ahead-1 copy groups are in flight (so tile t has landed for this
// thread), reaches a barrier (every thread's copies of tile t are visible, and every warp is
// done with the stage tile t+ahead overwrites), issues that tile, then computes on tile t.
StmtPtr MmaGemmBuilder::mmaSyncMainLoop(const ExprPtr &b, const ExprPtr &firstTile,
                                        const ExprPtr &tileCount) const {
  int64_t ahead = s_.stages - 1;
  return seq(cpAsyncPipeline(
      b, firstTile, tileCount, ahead, [&](const ExprPtr &tile, StmtPtr issueNext) {
        std::vector<StmtPtr> step{asyncWait(static_cast<int>(ahead - 1)), barrier(), issueNext};
        ExprPtr current = mod(tile, index(s_.stages));
        for (int64_t ks = 0; ks < s_.blockK / info_.k; ++ks)
          step.push_back(computeStep(current, ks));
        return seq(std::move(step));
      }));
}

// A fragments of the warp's tilesM row tiles for the k step starting at k0. Where ldmatrix
// fits (usesLdMatrix), one ldmatrix.x4 per row tile: lane l gives row l % 8 of matrix l / 8,
// the matrices being (rows 0-7, k 0..k/2), (rows 8-15, k 0..k/2), (rows 0-7, k k/2..k),
// (rows 8-15, k k/2..k) -- exactly the order of the mma A fragment's registers (16-bit
// elements in pairs, e4m3 in quads); stored K-major (16-bit only) they are read transposed.
// Otherwise (tf32, or an e4m3 operand whose contiguous axis is not K) the elements are loaded
// one by one at the A layout of ir/kernel/MmaLayout.h.
StmtPtr MmaGemmBuilder::loadFragmentsA(const ExprPtr &stageBase, int64_t k0) const {
  std::vector<StmtPtr> stmts;
  for (int64_t mi = 0; mi < tilesM_; ++mi) {
    ExprPtr m0 = add(warpRow0_, index(mi * info_.m));
    if (usesLdMatrix(a_)) {
      ExprPtr matrix = div(lane_, index(8)), r = mod(lane_, index(8));
      ExprPtr rowHalf = mul(mod(matrix, index(2)), index(8));
      ExprPtr kHalf = mul(div(matrix, index(2)), index(info_.k / 2));
      ExprPtr row, col;
      if (a_.contiguousInK) {
        row = add(add(m0, r), rowHalf);
        col = add(index(k0), kHalf);
      } else {
        row = add(add(index(k0), kHalf), r);
        col = add(m0, rowHalf);
      }
      stmts.push_back(ldMatrix({aFrag_, mi * info_.aElements}, 4, !a_.contiguousInK, a_.shared,
                               add(stageBase, swizzled(a_, row, col))));
      continue;
    }
    for (int e = 0; e < info_.aElements; ++e) {
      FragmentOffset f = fragmentOffset(kind_, MmaOperand::A, e);
      KILN_CHECK(!f.tInRows, "an mma A layout whose rows move with t");
      ExprPtr m = add(m0, add(group_, index(f.row)));
      ExprPtr k = add(index(k0 + f.column), mul(threadInGroup_, index(f.tStep)));
      ExprPtr at = a_.contiguousInK ? swizzled(a_, m, k) : swizzled(a_, k, m);
      stmts.push_back(store(aFrag_, index(mi * info_.aElements + e),
                            load(a_.shared, add(stageBase, at))));
    }
  }
  return seq(std::move(stmts));
}

// B fragments of the warp's tilesN column tiles. With ldmatrix, one .x4 per pair of n8 tiles,
// matrices (k 0..k/2, n 0-7), (k k/2..k, n 0-7), (k 0..k/2, n 8-15), (k k/2..k, n 8-15): the
// registers of the first tile, then of the second. B stored N-major (k contiguous) is read as
// is, stored K-major (n contiguous, 16-bit only) transposed. Otherwise element by element.
StmtPtr MmaGemmBuilder::loadFragmentsB(const ExprPtr &stageBase, int64_t k0) const {
  std::vector<StmtPtr> stmts;
  if (usesLdMatrix(b_)) {
    for (int64_t pair = 0; pair < tilesN_ / 2; ++pair) {
      ExprPtr n0 = add(warpCol0_, index(pair * 2 * info_.n));
      ExprPtr matrix = div(lane_, index(8)), r = mod(lane_, index(8));
      ExprPtr kHalf = mul(mod(matrix, index(2)), index(info_.k / 2));
      ExprPtr nHalf = mul(div(matrix, index(2)), index(8));
      ExprPtr row, col;
      if (b_.contiguousInK) {
        row = add(add(n0, nHalf), r);
        col = add(index(k0), kHalf);
      } else {
        row = add(add(index(k0), kHalf), r);
        col = add(n0, nHalf);
      }
      stmts.push_back(ldMatrix({bFrag_, pair * 2 * info_.bElements}, 4, !b_.contiguousInK,
                               b_.shared, add(stageBase, swizzled(b_, row, col))));
    }
    return seq(std::move(stmts));
  }
  for (int64_t ni = 0; ni < tilesN_; ++ni)
    for (int e = 0; e < info_.bElements; ++e) {
      FragmentOffset f = fragmentOffset(kind_, MmaOperand::B, e);
      KILN_CHECK(f.tInRows, "an mma B layout whose columns move with t");
      ExprPtr n = add(add(warpCol0_, index(ni * info_.n + f.column)), group_);
      ExprPtr k = add(index(k0 + f.row), mul(threadInGroup_, index(f.tStep)));
      ExprPtr at = b_.contiguousInK ? swizzled(b_, n, k) : swizzled(b_, k, n);
      stmts.push_back(store(bFrag_, index(ni * info_.bElements + e),
                            load(b_.shared, add(stageBase, at))));
    }
  return seq(std::move(stmts));
}

StmtPtr MmaGemmBuilder::computeStep(const ExprPtr &stage, int64_t ks) const {
  int64_t k0 = ks * info_.k;
  std::vector<StmtPtr> stmts{loadFragmentsA(mul(stage, index(stageSize(a_))), k0),
                             loadFragmentsB(mul(stage, index(stageSize(b_))), k0)};
  for (int64_t mi = 0; mi < tilesM_; ++mi)
    for (int64_t ni = 0; ni < tilesN_; ++ni) {
      Fragment c{acc_, (mi * tilesN_ + ni) * info_.cElements};
      stmts.push_back(mma(kind_, c, {aFrag_, mi * info_.aElements},
                          {bFrag_, ni * info_.bElements}, c));
    }
  return seq(std::move(stmts));
}

} // namespace kiln::lower::tensorcore
