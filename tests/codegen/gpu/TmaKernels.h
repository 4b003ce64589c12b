// A warp-specialized GEMM kernel built by hand: warpgroup 0 produces (one thread waits for a
// free stage, expects its bytes and issues the bulk tensor copies of an A and a B tile),
// warpgroup 1 consumes (waits for a full stage, runs its wgmma products, releases the stage).
// The simulator tests run it and its misuses; the codegen tests compile it; test_gpu runs it.
#pragma once

#include "ir/kernel/Builder.h"
#include "ir/kernel/TensorMap.h"
#include "ir/kernel/WgmmaLayout.h"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace kiln::testing {

/// D[64 x n] = A[64 x k] x B[n x k]^T, bf16 operands K-major in global memory, f32 D.
struct TmaKernelSpec {
  int n = 64;
  int kTiles = 5; ///< K = 64 kTiles (one 128-byte swizzled row of bf16 per tile)
  int stages = 2;
  int64_t m = 64;             ///< rows of A (below 64: the box hangs over the edge, read as 0)
  bool releaseEarly = false;  ///< release a stage before the wgmma wait retires its readers
  bool expectTx = true;       ///< the producer expects the copies' bytes (else a plain arrive)
  bool expectShort = false;   ///< ... all but 128 of them
  bool waitFull = true;       ///< the consumer waits for the stage's copies
  bool barrierAfterInit = true;
  bool wrongProducerParity = false; ///< the producer waits for the wrong phase: a deadlock
};

inline kir::Kernel tmaPipelineKernel(const TmaKernelSpec &spec) {
  using namespace kir;
  constexpr int64_t kTileK = 64;
  const int64_t n = spec.n, k = kTileK * spec.kTiles, stages = spec.stages;
  auto a = makeBuffer("a", DType::BF16, spec.m * k);
  auto b = makeBuffer("b", DType::BF16, n * k);
  auto d = makeBuffer("d", DType::F32, int64_t(kWgmmaM) * n);
  auto aMap = std::make_shared<TensorMap>(TensorMap{
      "a_map", a, {k, spec.m}, {k}, {kTileK, int64_t(kWgmmaM)}, TmaSwizzle::Bytes128});
  auto bMap = std::make_shared<TensorMap>(
      TensorMap{"b_map", b, {k, n}, {k}, {kTileK, n}, TmaSwizzle::Bytes128});
  const int64_t aStage = kWgmmaM * kTileK, bStage = n * kTileK;
  auto aTile = makeBuffer("a_tile", DType::BF16, stages * aStage, MemScope::Shared);
  auto bTile = makeBuffer("b_tile", DType::BF16, stages * bStage, MemScope::Shared);
  auto bars = makeBuffer("bars", DType::I64, 2 * stages, MemScope::Shared); // full, then empty
  auto acc = makeBuffer("acc", DType::F32, n / 2, MemScope::Register);
  auto tv = makeVar("t");
  ExprPtr t = kir::ref(tv);
  auto full = [&](ExprPtr s) { return s; };
  auto empty = [&](ExprPtr s) { return add(s, index(stages)); };

  std::vector<StmtPtr> init;
  auto si = makeVar("si");
  init.push_back(ifThen(eq(t, index(0)),
                        forRange(si, stages, ForKind::Serial,
                                 seq({mbarrierInit(bars, full(kir::ref(si)), 1),
                                      mbarrierInit(bars, empty(kir::ref(si)), 1)}))));
  if (spec.barrierAfterInit)
    init.push_back(barrier());

  // Producer: tile kt into stage kt % stages once the consumer has released it.
  auto pk = makeVar("pk");
  ExprPtr pt = kir::ref(pk), ps = mod(pt, index(stages));
  ExprPtr round = mod(div(pt, index(stages)), index(2));
  ExprPtr producerParity = spec.wrongProducerParity ? round : sub(index(1), round);
  const int64_t bytes = (aStage + bStage) * 2 - (spec.expectShort ? 128 : 0);
  StmtPtr produce = forRange(
      pk, spec.kTiles, ForKind::Serial,
      seq({mbarrierWait(bars, empty(ps), producerParity),
           spec.expectTx ? mbarrierArriveExpectTx(bars, full(ps), bytes)
                         : mbarrierArrive(bars, full(ps)),
           tmaLoad(aTile, mul(ps, index(aStage)), aMap, {mul(pt, index(kTileK)), index(0)}, bars,
                   full(ps)),
           tmaLoad(bTile, mul(ps, index(bStage)), bMap, {mul(pt, index(kTileK)), index(0)}, bars,
                   full(ps))}));

  // Consumer: four k16 products per tile, retired before the stage goes back.
  auto ck = makeVar("ck");
  ExprPtr ct = kir::ref(ck), cs = mod(ct, index(stages));
  std::vector<StmtPtr> step;
  if (spec.waitFull)
    step.push_back(mbarrierWait(bars, full(cs), mod(div(ct, index(stages)), index(2))));
  step.push_back(wgmmaSync(WgmmaSyncOp::Fence));
  for (int64_t ks = 0; ks < kTileK / 16; ++ks)
    step.push_back(wgmma(WgmmaKind::BF16_K16, spec.n, {acc, 0},
                         {aTile, add(mul(cs, index(aStage)), index(ks * 16)), false, 16, 1024},
                         {bTile, add(mul(cs, index(bStage)), index(ks * 16)), false, 16, 1024},
                         true));
  step.push_back(wgmmaSync(WgmmaSyncOp::Commit));
  StmtPtr release = ifThen(eq(t, index(kWarpgroupThreads)), mbarrierArrive(bars, empty(cs)));
  if (spec.releaseEarly)
    step.push_back(release);
  step.push_back(wgmmaSync(WgmmaSyncOp::Wait, 0));
  if (!spec.releaseEarly)
    step.push_back(release);

  auto z = makeVar("z"), e = makeVar("e");
  ExprPtr lane = mod(t, index(32)), warp = mod(div(t, index(32)), index(4));
  std::vector<StmtPtr> writeOut;
  for (int64_t x = 0; x < n / 2; ++x) {
    MatrixPosition at = wgmmaAccumulatorPosition(0, static_cast<int>(x));
    ExprPtr row = add(index(at.row), add(mul(warp, index(16)), div(lane, index(4))));
    ExprPtr col = add(index(at.col), mul(mod(lane, index(4)), index(2)));
    writeOut.push_back(store(d, add(mul(row, index(n)), col), load(acc, index(x))));
  }
  (void)e;
  StmtPtr consume = allocate(
      acc, seq({forRange(z, n / 2, ForKind::Serial,
                         store(acc, kir::ref(z), floatImm(0.0, Type::scalar(DType::F32)))),
                forRange(ck, spec.kTiles, ForKind::Serial, seq(std::move(step))),
                seq(std::move(writeOut))}));

  StmtPtr roles = ifThen(lt(t, index(kWarpgroupThreads)), ifThen(eq(t, index(0)), produce),
                         consume);
  StmtPtr thread = forRange(tv, 2 * kWarpgroupThreads, ForKind::ThreadX,
                            seq({seq(std::move(init)), roles}));
  return Kernel{fmt::format("tma_pipeline_n{}_s{}", n, stages),
                {a, b, d},
                allocate(aTile, allocate(bTile, allocate(bars, thread)))};
}

} // namespace kiln::testing
