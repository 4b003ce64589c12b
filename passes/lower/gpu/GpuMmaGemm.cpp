// The tensor-core GEMM template (see GpuMmaGemm.h and docs/gpu-tensor-cores.md): what every
// strategy shares. The strategies' K loops are in MmaSyncMainloop.cpp, WgmmaMainloop.cpp and
// TmaMainloop.cpp (MmaGemmBuilder.h).
#include "passes/lower/gpu/GpuMmaGemm.h"

#include "passes/lower/gpu/GemmSplitK.h"
#include "passes/lower/gpu/GpuMmaSchedule.h"
#include "passes/lower/gpu/GpuWgmmaSchedule.h"
#include "passes/lower/gpu/MmaGemmBuilder.h"
#include "passes/lower/LowerUtil.h"

#include <algorithm>

namespace kiln::lower::tensorcore {
namespace {


ExprPtr bitXor(ExprPtr a, ExprPtr b) {
  // a ^ b = (a | b) - (a & b): kernel IR has bitwise and/or on integers, no xor.
  return sub(binary(BinaryOp::Or, a, b), binary(BinaryOp::And, a, b));
}

/// The element strides of a dense operand along its free axis, K and the batch, when its
/// offset function is affine with constant strides, the contiguous axis unit-stride, and the
/// operand starting at element 0: what a tensor map needs.
struct OperandStrides {
  int64_t free = 0, k = 0, batch = 0;
};

std::optional<OperandStrides> affineStrides(const GemmOffsetFn &offset, bool kSecond,
                                            bool contiguousInK) {
  // kSecond: offset(b, free, k) (A); otherwise offset(b, k, free) (B).
  auto at = [&](int64_t b, int64_t free, int64_t k) {
    return kSecond ? constIntValue(offset(index(b), index(free), index(k)))
                   : constIntValue(offset(index(b), index(k), index(free)));
  };
  std::optional<int64_t> origin = at(0, 0, 0), free = at(0, 1, 0), k = at(0, 0, 1),
                         batch = at(1, 0, 0), mixed = at(1, 2, 3);
  if (!origin || !free || !k || !batch || !mixed || *origin != 0)
    return std::nullopt;
  OperandStrides strides{*free, *k, *batch};
  if (*mixed != strides.batch + 2 * strides.free + 3 * strides.k ||
      (contiguousInK ? strides.k : strides.free) != 1)
    return std::nullopt;
  return strides;
}

/// The tensor map of a dense operand whose boxes are `panel` contiguous elements by `rows`
/// (nullptr when its layout does not make one): dimensions contiguous axis, other axis, and
/// the batch where it moves (a broadcast operand has none).
TensorMapPtr operandTensorMap(std::string name, const DenseOperand &dense, bool kSecond,
                              bool contiguousInK, int64_t batch, int64_t freeExtent, int64_t k,
                              int64_t panel, int64_t rows) {
  std::optional<OperandStrides> strides = affineStrides(dense.offset, kSecond, contiguousInK);
  if (!strides)
    return nullptr;
  TensorMap map;
  map.name = std::move(name);
  map.global = dense.buffer;
  map.dims = contiguousInK ? std::vector<int64_t>{k, freeExtent}
                           : std::vector<int64_t>{freeExtent, k};
  map.strides = {contiguousInK ? strides->free : strides->k};
  map.box = {panel, rows};
  if (batch > 1 && strides->batch != 0) {
    map.dims.push_back(batch);
    map.strides.push_back(strides->batch);
    map.box.push_back(1);
  }
  map.swizzle = TmaSwizzle::Bytes128;
  if (tensorMapProblem(map))
    return nullptr;
  return std::make_shared<TensorMap>(std::move(map));
}

} // namespace

MmaGemmBuilder::MmaGemmBuilder(const GemmProblem &problem, const GpuMatMulSchedule &schedule,
                               MmaKind kind, std::optional<WgmmaKind> wgmmaKind,
                               const codegen::GpuTarget &target)
    : p_(problem), s_(schedule), kind_(kind), wgmma_(wgmmaKind),
      mainloop_(schedule.tma ? Mainloop::Tma
                : wgmmaKind  ? Mainloop::CpAsyncWgmma
                             : Mainloop::MmaSync),
      info_(mmaShapeInfo(kind)), dtype_(info_.operandDtype), target_(target) {
  chunk_ = 16 / dtypeByteSize(dtype_);
  warpsN_ = s_.blockN / s_.warpN;
  threads_ = gpuMmaThreads(s_);
  numK_ = p_.k == 0 ? 0 : ceilDiv(p_.k, s_.blockK);
  tilesM_ = s_.warpM / (wgmma_ ? kWgmmaM : info_.m);
  tilesN_ = wgmma_ ? 1 : s_.warpN / info_.n;
  a_ = makeOperand("a", s_.blockM, p_.m, p_.aContiguousInK);
  if (p_.aGathered) {
    a_.buffer = p_.aGathered->buffer;
    a_.address = p_.aGathered->address;
    a_.run = p_.aGathered->run;
  } else {
    GemmOffsetFn offset = p_.aDense->offset;
    a_.buffer = p_.aDense->buffer;
    a_.address = [offset](ExprPtr b, ExprPtr i, ExprPtr k) {
      return std::pair<ExprPtr, ExprPtr>(offset(b, i, k), nullptr);
    };
    a_.run = p_.aDense->alignment;
  }
  // The B offset takes (b, k, j); the loader's order is (b, free, k).
  b_ = makeOperand("b", s_.blockN, p_.n, p_.bContiguousInK);
  GemmOffsetFn bOffset = p_.bDense->offset;
  b_.buffer = p_.bDense->buffer;
  b_.address = [bOffset](ExprPtr b, ExprPtr j, ExprPtr k) {
    return std::pair<ExprPtr, ExprPtr>(bOffset(b, k, j), nullptr);
  };
  b_.run = p_.bDense->alignment;
  a_.lanes = std::min<int>(s_.vectorWidth, gpuMmaCopyLanes(a_.run, dtype_));
  b_.lanes = std::min<int>(s_.vectorWidth, gpuMmaCopyLanes(b_.run, dtype_));
  if (mainloop_ == Mainloop::Tma && p_.aDense && p_.bDense) {
    a_.map = operandTensorMap(name("a_map"), *p_.aDense, true, a_.contiguousInK, p_.batch,
                              p_.m, p_.k, a_.panel, a_.contiguousInK ? a_.rows : s_.blockK);
    b_.map = operandTensorMap(name("b_map"), *p_.bDense, false, b_.contiguousInK, p_.batch,
                              p_.n, p_.k, b_.panel, b_.contiguousInK ? b_.rows : s_.blockK);
  }
}

TileOperand MmaGemmBuilder::makeOperand(std::string operandName, int64_t freeTile,
                                        int64_t freeExtent, bool contiguousInK) const {
  TileOperand op;
  op.name = std::move(operandName);
  op.freeTile = freeTile;
  op.freeExtent = freeExtent;
  op.contiguousInK = contiguousInK;
  op.inner = contiguousInK ? s_.blockK : freeTile;
  op.rows = contiguousInK ? freeTile : s_.blockK;
  op.panel = wgmma_ ? kWgmmaRowBytes / dtypeByteSize(dtype_) : op.inner;
  op.shared = makeBuffer(name(op.name + "_tile"), dtype_, s_.stages * op.rows * op.inner,
                         MemScope::Shared);
  return op;
}

ExprPtr MmaGemmBuilder::swizzled(const TileOperand &op, const ExprPtr &row,
                                 const ExprPtr &col) const {
  if (op.panel < op.inner) {
    // wgmma: panel col / panel of the whole stage, then the column within it.
    TileOperand inPanel = op;
    inPanel.inner = op.panel;
    ExprPtr panelBase = mul(div(col, index(op.panel)), index(op.rows * op.panel));
    return add(panelBase, swizzled(inPanel, row, mod(col, index(op.panel))));
  }
  int64_t chunks = op.inner / chunk_;
  ExprPtr chunkIndex = div(col, index(chunk_));
  ExprPtr within = mod(col, index(chunk_));
  ExprPtr physical = chunkIndex;
  if (chunks >= 8) {
    physical = bitXor(chunkIndex, mod(row, index(8)));
  } else if (chunks > 1) {
    int64_t rowsPerLine = 8 / chunks; // rows sharing one 128-byte line of banks
    physical = bitXor(chunkIndex, mod(div(row, index(rowsPerLine)), index(chunks)));
  }
  return add(add(mul(row, index(op.inner)), mul(physical, index(chunk_))), within);
}

// Copy c = u * threads + tid of the tile: consecutive threads take consecutive chunks of a row
// (coalesced global reads). A copy is either wholly inside the problem or wholly outside
// (the copy width divides the contiguous runs), and one outside -- or in an im2col's padding --
// reads nothing and writes zeros.
StmtPtr MmaGemmBuilder::copyTile(const TileOperand &op, const ExprPtr &b, const ExprPtr &free0,
                                 const ExprPtr &tile, const ExprPtr &stage) const {
  int64_t lanes = op.lanes;
  int64_t copiesPerRow = op.inner / lanes;
  int64_t copies = op.rows * copiesPerRow;
  int64_t perThread = ceilDiv(copies, threads_);
  ExprPtr k0 = mul(tile, index(s_.blockK));
  ExprPtr base = mul(stage, index(stageSize(op)));
  std::vector<StmtPtr> stmts;
  for (int64_t u = 0; u < perThread; ++u) {
    ExprPtr c = add(index(u * threads_), tid_);
    ExprPtr col = mul(mod(c, index(copiesPerRow)), index(lanes));
    ExprPtr row = div(c, index(copiesPerRow));
    ExprPtr free = add(free0, op.contiguousInK ? row : col);
    ExprPtr k = add(k0, op.contiguousInK ? col : row);
    ExprPtr inside;
    auto both = [](ExprPtr x, ExprPtr y) { return x ? logicalAnd(x, y) : y; };
    if (op.freeExtent % op.freeTile != 0 || op.freeExtent < op.freeTile)
      inside = both(inside, lt(free, index(op.freeExtent)));
    if (p_.k % s_.blockK != 0)
      inside = both(inside, lt(k, index(p_.k)));
    // Clamped so that even a copy that reads nothing names an address inside the operand.
    ExprPtr freeAt = min(free, index(op.freeExtent - (op.contiguousInK ? 1 : lanes)));
    ExprPtr kAt = min(k, index(p_.k - (op.contiguousInK ? lanes : 1)));
    auto [offset, inOperand] = op.address(b, freeAt, kAt);
    if (inOperand)
      inside = both(inside, inOperand); // the padding of an implicit im2col
    StmtPtr copy = asyncCopy(op.shared, add(base, swizzled(op, row, col)), op.buffer, offset,
                             static_cast<int>(lanes), inside);
    stmts.push_back((u + 1) * threads_ > copies ? ifThen(lt(c, index(copies)), copy) : copy);
  }
  return seq(std::move(stmts));
}

StmtPtr MmaGemmBuilder::copyTiles(const ExprPtr &b, const ExprPtr &tile,
                                  const ExprPtr &stage) const {
  return seq({copyTile(a_, b, i0_, tile, stage), copyTile(b_, b, j0_, tile, stage)});
}

// Tile t lives in stage t % stages. The prologue issues tiles 0 .. ahead-1, a group each; step
// t issues tile t + ahead (a group even when empty, so the count stays uniform), keeping
// `ahead` tiles of copies in flight. Tiles are counted from `firstTile` (a split's first K
// tile); `tileCount` may vary by block.
std::vector<StmtPtr> MmaGemmBuilder::cpAsyncPipeline(const ExprPtr &b, const ExprPtr &firstTile,
                                                     const ExprPtr &tileCount, int64_t ahead,
                                                     const TileStepFn &tileStep) const {
  std::optional<int64_t> staticCount = constIntValue(tileCount);
  if (staticCount && *staticCount == 0)
    return {};
  std::vector<StmtPtr> prologue;
  for (int64_t t = 0; t < ahead; ++t) {
    StmtPtr copy = copyTiles(b, add(firstTile, index(t)), index(t));
    if (!staticCount)
      prologue.push_back(ifThen(lt(index(t), tileCount), copy));
    else if (t < *staticCount)
      prologue.push_back(copy);
    prologue.push_back(asyncCommit());
  }
  VarPtr tileVar = makeVar(name("kt"));
  ExprPtr tile = kir::ref(tileVar), next = add(tile, index(ahead));
  StmtPtr issueNext = seq({ifThen(lt(next, tileCount), copyTiles(b, add(firstTile, next),
                                                                 mod(next, index(s_.stages)))),
                           asyncCommit()});
  return {seq(std::move(prologue)),
          forLoop(tileVar, index(0), tileCount, ForKind::Serial, tileStep(tile, issueNext))};
}

// The one place the strategy picks the K loop.
StmtPtr MmaGemmBuilder::mainLoop(const ExprPtr &b, const ExprPtr &firstTile,
                                 const ExprPtr &tileCount) const {
  switch (mainloop_) {
  case Mainloop::MmaSync: return mmaSyncMainLoop(b, firstTile, tileCount);
  case Mainloop::CpAsyncWgmma: return wgmmaMainLoop(b, firstTile, tileCount);
  case Mainloop::Tma: return consumerLoop(tileCount, index(0), /*releaseLast=*/false);
  }
  KILN_UNREACHABLE("MmaGemmBuilder::mainLoop: strategy");
}

StmtPtr MmaGemmBuilder::zeroAccumulators() const {
  std::vector<StmtPtr> stores;
  for (int64_t x = 0; x < acc_->size; ++x)
    stores.push_back(store(acc_, index(x), constant(0.0, Type::scalar(DType::F32))));
  return seq(std::move(stores));
}

// Accumulator e of tile (mi, ni) is at row g + 8 (e / 2), column 2 t + e % 2 of the tile
// (the C layout of ir/kernel/MmaLayout.h). In both layouts accumulators 2p and 2p + 1 are
// columns j and j + 1 (j even) of one row: they are visited together, under one guard when
// N is even (then j < N implies j + 1 < N), so the two stores sit side by side and a backend
// can make them one.
template <typename Fn> Expected<StmtPtr> MmaGemmBuilder::forEachAccumulator(Fn &&atElement) const {
  std::vector<StmtPtr> stmts;
  auto pair = [&](ExprPtr i, ExprPtr j, int64_t first) -> Expected<void> {
    KILN_TRY(StmtPtr left, atElement(i, j, load(acc_, index(first))));
    ExprPtr j1 = add(j, index(1));
    KILN_TRY(StmtPtr right, atElement(i, j1, load(acc_, index(first + 1))));
    if (p_.n % 2 == 0) {
      stmts.push_back(guardEdges(p_, s_.blockM, s_.blockN, i, j, seq({left, right})));
    } else {
      stmts.push_back(guardEdges(p_, s_.blockM, s_.blockN, i, j, left));
      stmts.push_back(guardEdges(p_, s_.blockM, s_.blockN, i, j1, right));
    }
    return {};
  };
  if (wgmma_) {
    // Accumulator e of the 64-row slice mi: the position ir/kernel/WgmmaLayout.h gives thread
    // 0, plus 16 rows per warp of the group, g rows and 2t columns.
    for (int64_t mi = 0; mi < tilesM_; ++mi)
      for (int e = 0; e < s_.warpN / 2; e += 2) {
        MatrixPosition at = wgmmaAccumulatorPosition(0, e);
        MatrixPosition next = wgmmaAccumulatorPosition(0, e + 1);
        KILN_CHECK(next.row == at.row && next.col == at.col + 1,
                   "wgmma accumulators pair up along a row");
        ExprPtr row = add(index(mi * kWgmmaM + at.row), add(mul(warpInGroup_, index(16)), group_));
        ExprPtr i = add(i0_, add(warpRow0_, row));
        ExprPtr j = add(j0_, add(warpCol0_, add(index(at.col), mul(threadInGroup_, index(2)))));
        KILN_TRY_VOID(pair(i, j, mi * (s_.warpN / 2) + e));
      }
    return seq(std::move(stmts));
  }
  for (int64_t mi = 0; mi < tilesM_; ++mi)
    for (int64_t ni = 0; ni < tilesN_; ++ni)
      for (int64_t e = 0; e < info_.cElements; e += 2) {
        ExprPtr i = add(i0_, add(warpRow0_, add(index(mi * info_.m + 8 * (e / 2)), group_)));
        ExprPtr j =
            add(j0_, add(warpCol0_, add(index(ni * info_.n), mul(threadInGroup_, index(2)))));
        KILN_TRY_VOID(pair(i, j, (mi * tilesN_ + ni) * info_.cElements + e));
      }
  return seq(std::move(stmts));
}

Expected<StmtPtr> MmaGemmBuilder::epilogue(const ExprPtr &b) const {
  return forEachAccumulator([&](ExprPtr i, ExprPtr j, ExprPtr value) {
    std::vector<ExprPtr> bij{b, i, j};
    return p_.storeResult(bij, value);
  });
}

// A persistent block takes output tiles block, block + blocks, ... in the grid's order. Both
// roles walk the same tiles; the pipeline's iterations count on across them (w * numK + k),
// so stages and phases carry over, and the consumers hand the last stage of a tile back
// before its epilogue: the producer is already filling the next tile's stages while they
// store.
Expected<StmtPtr> MmaGemmBuilder::persistentRoles(
    const GemmGrid &grid, const ExprPtr &block, int64_t blocks,
    const std::function<StmtPtr(StmtPtr)> &consumerScope) {
  // Tiles of this block: t = block + w * blocks < tiles, block < blocks <= tiles.
  ExprPtr count = add(div(sub(index(grid.tiles() - 1), block), index(blocks)), index(1));
  // Each role binds the tile's batch, first row and first column for the code it builds.
  auto walk = [&](std::string_view role, auto &&tileBody) -> Expected<StmtPtr> {
    VarPtr w = makeVar(name(fmt::format("{}w", role)));
    VarPtr batch = makeVar(name(fmt::format("{}b", role)));
    VarPtr row0 = makeVar(name(fmt::format("{}i0", role)));
    VarPtr col0 = makeVar(name(fmt::format("{}j0", role)));
    GemmGrid::TileAt at = grid.tileAt(add(block, mul(kir::ref(w), index(blocks))));
    i0_ = kir::ref(row0);
    j0_ = kir::ref(col0);
    KILN_TRY(StmtPtr body, tileBody(kir::ref(batch), mul(kir::ref(w), index(numK_))));
    body = let(batch, at.batch, let(row0, at.row0, let(col0, at.col0, body)));
    return forLoop(w, index(0), count, ForKind::Serial, body);
  };
  KILN_TRY(StmtPtr produce,
           walk("p", [&](ExprPtr b, ExprPtr pipelined) -> Expected<StmtPtr> {
             return producerLoop(b, index(0), index(numK_), pipelined);
           }));
  KILN_TRY(StmtPtr consume,
           walk("c", [&](ExprPtr b, ExprPtr pipelined) -> Expected<StmtPtr> {
             KILN_TRY(StmtPtr tail, epilogue(b));
             return seq({zeroAccumulators(),
                         consumerLoop(index(numK_), pipelined, /*releaseLast=*/true), tail});
           }));
  return tmaRoles(produce, consumerScope(consume));
}

Expected<GemmLowering> MmaGemmBuilder::build() {
  VarPtr tid = makeVar(name("tid"));
  tid_ = kir::ref(tid);
  if (mainloop_ == Mainloop::Tma) {
    if (!a_.map || !b_.map)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("{}: bulk tensor copies (tma) need both operands as plain "
                                   "strided tensors with 16-byte aligned strides",
                                   p_.name));
    // Warpgroup 0 produces; the consumers' warp tiles count from thread 128.
    threadIndex_ = tid_;
    tid_ = sub(tid_, index(kWarpgroupThreads));
    barriers_ = makeBuffer(name("bars"), DType::I64, 2 * s_.stages, MemScope::Shared);
  }
  SplitKPlan split(p_, s_.splitK, s_.blockK);
  GemmGrid grid(p_, s_.blockM, s_.blockN, p_.name, split.splits(), s_.groupM);
  if (grid.empty())
    return idleGemm(tid);
  VarPtr lane = makeVar(name("lane")), warp = makeVar(name(wgmma_ ? "wg" : "warp"));
  VarPtr group = makeVar(name("g")), threadInGroup = makeVar(name("t"));
  VarPtr warpRow0 = makeVar(name("wm0")), warpCol0 = makeVar(name("wn0"));
  VarPtr warpInGroup = makeVar(name("wig"));
  warpInGroup_ = kir::ref(warpInGroup);
  lane_ = kir::ref(lane);
  group_ = kir::ref(group);
  threadInGroup_ = kir::ref(threadInGroup);
  warpRow0_ = kir::ref(warpRow0);
  warpCol0_ = kir::ref(warpCol0);
  ExprPtr warpIndex = kir::ref(warp);

  int64_t accCount = wgmma_ ? tilesM_ * (s_.warpN / 2) : tilesM_ * tilesN_ * info_.cElements;
  acc_ = makeBuffer(name("acc"), DType::F32, accCount, MemScope::Register);
  aFrag_ = makeBuffer(name("afrag"), dtype_, tilesM_ * info_.aElements, MemScope::Register);
  bFrag_ = makeBuffer(name("bfrag"), dtype_, tilesN_ * info_.bElements, MemScope::Register);
  // The accumulators and each thread's place in its warp (warpgroup) and in the block tile.
  auto consumerScope = [&](StmtPtr body) {
    // wgmma reads its operands from shared memory: no fragments; a warpgroup owns a warp tile.
    body = wgmma_ ? allocate(acc_, body)
                  : allocate(acc_, allocate(aFrag_, allocate(bFrag_, body)));
    body = let(warpCol0, mul(mod(warpIndex, index(warpsN_)), index(s_.warpN)), body);
    body = let(warpRow0, mul(div(warpIndex, index(warpsN_)), index(s_.warpM)), body);
    body = let(threadInGroup, mod(lane_, index(4)), let(group, div(lane_, index(4)), body));
    if (wgmma_)
      body = let(warpInGroup, mod(div(tid_, index(32)), index(kWarpgroupThreads / 32)), body);
    int64_t tileOwner = wgmma_ ? kWarpgroupThreads : 32;
    return let(warp, div(tid_, index(tileOwner)), let(lane, mod(tid_, index(32)), body));
  };

  StmtPtr body;
  VarPtr persistentBlock;
  int64_t persistentBlocks = 0;
  if (s_.persistent) {
    persistentBlock = makeVar(name("pblk"));
    persistentBlocks = persistentGridBlocks(s_, dtype_, grid.tiles(), target_);
    KILN_TRY(body, persistentRoles(grid, kir::ref(persistentBlock), persistentBlocks,
                                   consumerScope));
  } else {
    i0_ = grid.row0();
    j0_ = grid.col0();
    // Split-K: this block's K range, and its accumulators into the partial sums.
    ExprPtr firstTile = split.firstTile(grid.split()), tileCount = split.tileCount(grid.split());
    KILN_TRY(StmtPtr tail, forEachAccumulator([&](ExprPtr i, ExprPtr j, ExprPtr value) {
               std::vector<ExprPtr> bij{grid.batch(), i, j};
               return split.storeBlockResult(grid.split(), bij, value);
             }));
    StmtPtr loop = mainLoop(grid.batch(), firstTile, tileCount);
    body = consumerScope(seq({zeroAccumulators(), loop, tail}));
    if (mainloop_ == Mainloop::Tma)
      body = tmaRoles(producerLoop(grid.batch(), firstTile, tileCount, index(0)), body);
    body = grid.onlyLive(p_, body);
  }
  body = forRange(tid, threads_, ForKind::ThreadX, body);
  if (barriers_)
    body = allocate(barriers_, body);
  body = allocate(a_.shared, allocate(b_.shared, body));
  GemmLowering lowered{s_.persistent
                           ? forRange(persistentBlock, persistentBlocks, ForKind::BlockX, body)
                           : grid.wrap(body),
                       {}, {}};
  KILN_TRY_VOID(split.finish(lowered));
  return lowered;
}

} // namespace kiln::lower::tensorcore

namespace kiln::lower {

Expected<GemmLowering> lowerGpuMmaGemm(const GemmProblem &problem, const GemmShape &shape,
                                       const GpuMatMulSchedule &schedule,
                                       const codegen::GpuTarget &target) {
  using kir::MmaKind, kir::WgmmaKind;
  KILN_TRY_VOID(checkGpuMmaSchedule(schedule, shape, target));
  // The copies read a gathered run as adjacent elements (nhwc channels); nchw's plane-strided
  // runs are the CPU's Direct only (GPU convolutions lower as Im2col).
  KILN_CHECK(!problem.aGathered || problem.aGathered->stride == 1,
             "the tensor-core GEMM reads gathered runs of stride 1 only");
  if (schedule.wgmma) {
    // The products' operand dtype and k are those of the matching mma.sync kind.
    WgmmaKind kind = *gpuWgmmaKindFor(shape, target);
    MmaKind like = kind == WgmmaKind::F16_K16    ? MmaKind::F16_M16N8K16
                   : kind == WgmmaKind::BF16_K16 ? MmaKind::BF16_M16N8K16
                                                 : MmaKind::E4M3_M16N8K32;
    return tensorcore::MmaGemmBuilder(problem, schedule, like, kind, target).build();
  }
  return tensorcore::MmaGemmBuilder(problem, schedule, *gpuMmaKindFor(shape, target), std::nullopt,
                             target)
      .build();
}

} // namespace kiln::lower
