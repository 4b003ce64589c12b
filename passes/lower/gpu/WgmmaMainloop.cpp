// The cp.async + wgmma K loop of the tensor-core GEMM template (MmaGemmBuilder.h): the copies
// of the mma.sync loop, fenced for the async proxy, and each warpgroup's products read straight
// from the 128-byte swizzled panels (wgmmaStep, which the tma consumers run too).
#include "passes/lower/gpu/MmaGemmBuilder.h"

namespace kiln::lower::tensorcore {

// As the mma.sync loop, with the products reading shared memory through the async proxy:
// each thread fences its landed copies for it before the barrier. The warpgroup's products of
// tile t form one group; waiting until wgmmaInFlight() groups remain leaves tile t's products
// running into step t+1, whose barrier then guarantees only that tile t-1's are done -- which
// is why with one in flight the copies run ahead = stages - 2 tiles, never into the stage
// being read.
StmtPtr MmaGemmBuilder::wgmmaMainLoop(const ExprPtr &b, const ExprPtr &firstTile,
                                      const ExprPtr &tileCount) const {
  int64_t ahead = s_.stages - 1 - wgmmaInFlight();
  std::vector<StmtPtr> stmts = cpAsyncPipeline(
      b, firstTile, tileCount, ahead, [&](const ExprPtr &tile, StmtPtr issueNext) {
        std::vector<StmtPtr> step{asyncWait(static_cast<int>(ahead - 1)),
                                  wgmmaSync(WgmmaSyncOp::SharedFence), barrier(), issueNext,
                                  wgmmaSync(WgmmaSyncOp::Fence)};
        ExprPtr current = mod(tile, index(s_.stages));
        for (int64_t ks = 0; ks < s_.blockK / info_.k; ++ks)
          step.push_back(wgmmaStep(current, ks));
        step.push_back(wgmmaSync(WgmmaSyncOp::Commit));
        step.push_back(wgmmaSync(WgmmaSyncOp::Wait, static_cast<int>(wgmmaInFlight())));
        return seq(std::move(step));
      });
  if (stmts.empty())
    return nullptr;
  if (wgmmaInFlight() > 0)
    stmts.push_back(wgmmaSync(WgmmaSyncOp::Wait, 0)); // the last tile's products are done
  return seq(std::move(stmts));
}

// wgmma operands name the first element of the warpgroup's rows (free0) at K step k0 of a
// stage: K-major, the row's 128 bytes of K from k0 on; MN-major, row k0 of the 128-byte panel
// holding free0 (free0 starts a panel), the next panel `rows` rows on.
SharedMatrix MmaGemmBuilder::sharedMatrix(const TileOperand &op, const ExprPtr &stageBase,
                                          const ExprPtr &free0, int64_t k0) const {
  SharedMatrix matrix;
  matrix.buffer = op.shared;
  matrix.mnMajor = !op.contiguousInK;
  matrix.strideBytes = kWgmmaAtomBytes; // 8 rows of 128 bytes
  if (op.contiguousInK) {
    matrix.start = add(stageBase, add(mul(free0, index(op.inner)), index(k0)));
    matrix.leadingBytes = 16; // unused by swizzled K-major operands ("assumed 1")
  } else {
    ExprPtr panelBase = mul(div(free0, index(op.panel)), index(op.rows * op.panel));
    matrix.start = add(stageBase, add(panelBase, index(k0 * op.panel)));
    matrix.leadingBytes = op.rows * op.panel * dtypeByteSize(dtype_);
  }
  return matrix;
}

// One product per 64-row slice of the warpgroup's tile, each the tile's full width.
StmtPtr MmaGemmBuilder::wgmmaStep(const ExprPtr &stage, int64_t ks) const {
  int64_t k0 = ks * info_.k;
  ExprPtr aBase = mul(stage, index(stageSize(a_))), bBase = mul(stage, index(stageSize(b_)));
  std::vector<StmtPtr> stmts;
  for (int64_t mi = 0; mi < tilesM_; ++mi)
    stmts.push_back(wgmma(*wgmma_, s_.warpN, {acc_, mi * (s_.warpN / 2)},
                          sharedMatrix(a_, aBase, add(warpRow0_, index(mi * kWgmmaM)), k0),
                          sharedMatrix(b_, bBase, warpCol0_, k0), /*accumulate=*/true));
  return seq(std::move(stmts));
}

} // namespace kiln::lower::tensorcore
