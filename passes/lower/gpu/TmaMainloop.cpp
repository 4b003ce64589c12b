// The TMA producer / consumer K loop of the tensor-core GEMM template (MmaGemmBuilder.h): one
// thread of warpgroup 0 issues each stage's bulk tensor copies on a full mbarrier; the
// consumer warpgroups wait on it, run wgmma, and hand the stage back on its empty mbarrier.
#include "passes/lower/gpu/MmaGemmBuilder.h"

namespace kiln::lower::tensorcore {

StmtPtr MmaGemmBuilder::tmaRoles(StmtPtr produce, StmtPtr consume) const {
  // Thread 0 sets the barriers up (a full barrier takes the producer's one arrival, an empty
  // one each consumer warpgroup's); then warpgroup 0's first thread produces, the rest
  // consume, each side waiting on the other through the barriers.
  VarPtr stageVar = makeVar(name("si"));
  ExprPtr stage = kir::ref(stageVar);
  StmtPtr init = forRange(stageVar, s_.stages, ForKind::Serial,
                          seq({mbarrierInit(barriers_, fullBarrier(stage), 1),
                               mbarrierInit(barriers_, emptyBarrier(stage), consumerGroups())}));
  return seq({ifThen(eq(threadIndex_, index(0)), init), barrier(),
              ifThen(lt(threadIndex_, index(kWarpgroupThreads)),
                     ifThen(eq(threadIndex_, index(0)), std::move(produce)), std::move(consume))});
}

// The boxes of one stage: a K-major operand's stage is one box (its rows by the 128 bytes of
// K), an MN-major one's a box per 128-byte panel of the free axis (blockK rows each), landing
// one after another -- the layout swizzled() describes, which the copies' swizzle produces.
StmtPtr MmaGemmBuilder::tmaCopies(const ExprPtr &b, const ExprPtr &tile,
                                  const ExprPtr &stage) const {
  ExprPtr k0 = mul(tile, index(s_.blockK));
  std::vector<StmtPtr> copies;
  for (const TileOperand *op : {&a_, &b_}) {
    ExprPtr free0 = op == &a_ ? i0_ : j0_;
    ExprPtr base = mul(stage, index(stageSize(*op)));
    for (int64_t p = 0; p < op->inner / op->panel; ++p) {
      std::vector<ExprPtr> coords =
          op->contiguousInK ? std::vector<ExprPtr>{k0, free0}
                            : std::vector<ExprPtr>{add(free0, index(p * op->panel)), k0};
      if (op->map->dims.size() == 3)
        coords.push_back(b);
      copies.push_back(tmaLoad(op->shared, add(base, index(p * op->rows * op->panel)), op->map,
                               std::move(coords), barriers_, fullBarrier(stage)));
    }
  }
  return seq(std::move(copies));
}

// One thread of the producer warpgroup: tile t goes into stage t % stages once the consumers
// have released the tile before it there (round r = t / stages waits for the empty barrier's
// phase r - 1, the first round for none), expecting the whole boxes' bytes on the full barrier.
// t counts the block's pipeline iterations: `pipelined` before this output tile, then its K
// tiles.
StmtPtr MmaGemmBuilder::producerLoop(const ExprPtr &b, const ExprPtr &firstTile,
                                     const ExprPtr &tileCount, const ExprPtr &pipelined) const {
  VarPtr tileVar = makeVar(name("pk"));
  ExprPtr tile = kir::ref(tileVar), it = add(pipelined, tile), stage = stageOf(it);
  const int64_t bytes = (stageSize(a_) + stageSize(b_)) * dtypeByteSize(dtype_);
  StmtPtr step = seq({mbarrierWait(barriers_, emptyBarrier(stage), sub(index(1), parityOf(it))),
                      mbarrierArriveExpectTx(barriers_, fullBarrier(stage), bytes),
                      tmaCopies(b, add(firstTile, tile), stage)});
  return forLoop(tileVar, index(0), tileCount, ForKind::Serial, step);
}

// Each consumer warpgroup: waits for tile t's copies, issues its products as one group, and
// once the group of tile t-1 has retired (one stays in flight) hands that tile's stage back
// -- one arrival per warpgroup, from its first thread.
StmtPtr MmaGemmBuilder::consumerLoop(const ExprPtr &tileCount, const ExprPtr &pipelined,
                                     bool releaseLast) const {
  VarPtr tileVar = makeVar(name("ck"));
  ExprPtr tile = kir::ref(tileVar), it = add(pipelined, tile);
  std::vector<StmtPtr> step{mbarrierWait(barriers_, fullBarrier(stageOf(it)), parityOf(it)),
                            wgmmaSync(WgmmaSyncOp::Fence)};
  for (int64_t ks = 0; ks < s_.blockK / info_.k; ++ks)
    step.push_back(wgmmaStep(stageOf(it), ks));
  step.push_back(wgmmaSync(WgmmaSyncOp::Commit));
  step.push_back(wgmmaSync(WgmmaSyncOp::Wait, 1));
  ExprPtr firstThread = eq(mod(tid_, index(kWarpgroupThreads)), index(0));
  ExprPtr previous = stageOf(add(it, index(s_.stages - 1)));
  step.push_back(ifThen(logicalAnd(gt(tile, index(0)), firstThread),
                        mbarrierArrive(barriers_, emptyBarrier(previous))));
  std::vector<StmtPtr> stmts{forLoop(tileVar, index(0), tileCount, ForKind::Serial,
                                     seq(std::move(step))),
                             wgmmaSync(WgmmaSyncOp::Wait, 0)};
  if (releaseLast) {
    // Every group has retired: the last tile's stage is free before the epilogue runs.
    ExprPtr last = stageOf(add(pipelined, sub(tileCount, index(1))));
    ExprPtr any = gt(tileCount, index(0));
    stmts.push_back(ifThen(logicalAnd(any, firstThread),
                           mbarrierArrive(barriers_, emptyBarrier(last))));
  }
  return seq(std::move(stmts));
}

} // namespace kiln::lower::tensorcore
