// The GPU GEMM template (see GpuGemmTemplate.h and docs/gpu-contraction.md).
//
//   for batch, M tile, N tile (block.z, block.y, block.x):
//     shared As[stages][blockM x blockK], Bs[stages][blockK x blockN]
//     for tid (thread.x):  register acc[threadM x threadN]
//       for each K tile: cooperative, coalesced loads of both tiles into shared memory
//                        (cast to the accumulate dtype, zero outside the problem), barrier,
//                        acc += A fragment x B fragment for each k of the tile
//       epilogue: storeResult for every valid (i, j) of the thread's tile
//
// With two stages the next tile's global loads are issued (bound to lets) before the current
// tile is computed on and stored into the other buffer afterwards: one barrier per K step.
#include "passes/lower/gpu/GpuGemmTemplate.h"

#include "ir/kernel/Builder.h"
#include "passes/lower/gpu/GemmGrid.h"
#include "passes/lower/gpu/GemmSplitK.h"
#include "passes/lower/gpu/GpuGemmSchedule.h"
#include "passes/lower/gpu/GpuMmaGemm.h"
#include "passes/lower/LowerUtil.h"

#include <fmt/format.h>

namespace kiln::lower {
namespace {

using namespace kir;


/// One operand as the tile loader sees it: a `freeTile` x blockK tile of the free axis (i for
/// A, j for B) and K, stored in shared memory with the operand's contiguous axis innermost.
struct Operand {
  std::string name;
  int64_t freeTile = 0, freeExtent = 0;
  bool contiguousInK = true;
  std::function<ExprPtr(ExprPtr b, ExprPtr free, ExprPtr k)> element;
  std::optional<DenseOperand> dense; ///< offset arguments in (b, free, k) order
  BufferPtr shared;
  int lanes = 1; ///< elements per global load (vectors only where provably aligned)
};

/// One global load of a tile: the value, where it goes in the stage, and whether this thread
/// has that element at all (nullptr: always).
struct TileLoad {
  ExprPtr value, sharedIndex, inTile;
};

class GpuGemmBuilder {
public:
  GpuGemmBuilder(const GemmProblem &problem, const GpuMatMulSchedule &schedule)
      : p_(problem), s_(schedule), accType_(Type::scalar(problem.accumulate)) {
    bm_ = s_.blockM;
    bn_ = s_.blockN;
    bk_ = s_.blockK;
    tm_ = s_.threadM;
    tn_ = s_.threadN;
    threadsN_ = bn_ / tn_;
    threads_ = gpuGemmThreads(s_);
    numK_ = p_.k == 0 ? 0 : ceilDiv(p_.k, bk_);
    isFloat_ = isFloatingPoint(p_.accumulate);
    a_ = makeOperand("a", bm_, p_.m, p_.aContiguousInK,
                     [this](ExprPtr b, ExprPtr i, ExprPtr k) {
                       std::vector<ExprPtr> idx{b, i, k};
                       return p_.a(idx);
                     },
                     p_.aDense ? std::optional(*p_.aDense) : std::nullopt);
    std::optional<DenseOperand> bDense;
    if (p_.bDense) {
      // The template's B offset takes (b, k, j); the loader's order is (b, free, k).
      DenseOperand d = *p_.bDense;
      GemmOffsetFn offset = d.offset;
      d.offset = [offset](ExprPtr b, ExprPtr j, ExprPtr k) { return offset(b, k, j); };
      bDense = d;
    }
    b_ = makeOperand("b", bn_, p_.n, p_.bContiguousInK,
                     [this](ExprPtr b, ExprPtr j, ExprPtr k) {
                       std::vector<ExprPtr> idx{b, k, j};
                       return p_.b(idx);
                     },
                     bDense);
  }

  Expected<GemmLowering> build();

private:
  std::string name(std::string_view suffix) const { return fmt::format("{}_{}", p_.name, suffix); }
  ExprPtr zero(int lanes = 1) const { return constant(0.0, accType_.withLanes(lanes)); }

  Operand makeOperand(std::string operandName, int64_t freeTile, int64_t freeExtent,
                      bool contiguousInK,
                      std::function<ExprPtr(ExprPtr, ExprPtr, ExprPtr)> element,
                      std::optional<DenseOperand> dense) const;
  /// Shared index (within a stage) of tile element (free, k).
  ExprPtr sharedIndex(const Operand &op, const ExprPtr &free, const ExprPtr &k) const {
    if (op.contiguousInK)
      return add(mul(free, index(bk_)), k);
    return add(mul(k, index(op.freeTile)), free);
  }
  int64_t stageSize(const Operand &op) const { return op.freeTile * bk_; }

  std::vector<TileLoad> tileLoads(const Operand &op, const ExprPtr &b, const ExprPtr &free0,
                                  const ExprPtr &tile, const ExprPtr &tileValid) const;
  StmtPtr storeTile(const Operand &op, const std::vector<TileLoad> &loads,
                    const std::vector<ExprPtr> &values, const ExprPtr &stage) const;
  /// Loads tile `tile` of both operands and stores it into `stage` (no prefetch).
  StmtPtr loadAndStore(const ExprPtr &b, const ExprPtr &tile, const ExprPtr &stage) const;
  StmtPtr compute(const ExprPtr &stage) const;
  /// The K tiles [firstTile, firstTile + tileCount) of the block's output tile (a split's).
  StmtPtr mainLoop(const ExprPtr &b, const ExprPtr &firstTile, const ExprPtr &tileCount) const;
  Expected<StmtPtr> epilogue(const GemmGrid &grid, const SplitKPlan &split) const;
  Expected<StmtPtr> threadBody(const GemmGrid &grid, const SplitKPlan &split);

  const GemmProblem &p_;
  GpuMatMulSchedule s_;
  Type accType_;
  int64_t bm_, bn_, bk_, tm_, tn_, threadsN_, threads_, numK_;
  bool isFloat_ = true;
  Operand a_, b_;
  BufferPtr acc_;
  ExprPtr tid_, ty_, tx_, i0_, j0_;
};

Operand GpuGemmBuilder::makeOperand(std::string operandName, int64_t freeTile, int64_t freeExtent,
                                    bool contiguousInK,
                                    std::function<ExprPtr(ExprPtr, ExprPtr, ExprPtr)> element,
                                    std::optional<DenseOperand> dense) const {
  Operand op;
  op.name = std::move(operandName);
  op.freeTile = freeTile;
  op.freeExtent = freeExtent;
  op.contiguousInK = contiguousInK;
  op.element = std::move(element);
  op.dense = std::move(dense);
  op.shared = makeBuffer(name(op.name + "_tile"), p_.accumulate, s_.stages * freeTile * bk_,
                         MemScope::Shared);
  // A vector covers `vw` consecutive elements of the contiguous axis: every run of that axis
  // must start aligned (DenseOperand::alignment), split evenly into vectors, and so must the
  // tile's extent along it, so that every vector index is a multiple of its lane count.
  int64_t vw = s_.vectorWidth;
  int64_t contiguousExtent = contiguousInK ? p_.k : freeExtent;
  int64_t contiguousTile = contiguousInK ? bk_ : freeTile;
  if (vw > 1 && op.dense && op.dense->alignment % vw == 0 && contiguousExtent % vw == 0 &&
      contiguousTile % vw == 0)
    op.lanes = static_cast<int>(vw);
  return op;
}

// Element e = u * threads + tid of the tile, in the order of the operand's contiguous axis, so
// consecutive threads read consecutive addresses (coalesced).
std::vector<TileLoad> GpuGemmBuilder::tileLoads(const Operand &op, const ExprPtr &b,
                                                const ExprPtr &free0, const ExprPtr &tile,
                                                const ExprPtr &tileValid) const {
  int64_t inner = op.contiguousInK ? bk_ : op.freeTile;
  int64_t outer = op.contiguousInK ? op.freeTile : bk_;
  int64_t lanes = op.lanes;
  int64_t vectorsPerRow = inner / lanes;
  int64_t vectors = outer * vectorsPerRow;
  int64_t perThread = ceilDiv(vectors, threads_);
  ExprPtr k0 = mul(tile, index(bk_));
  std::vector<TileLoad> loads;
  for (int64_t u = 0; u < perThread; ++u) {
    ExprPtr e = add(index(u * threads_), tid_);
    ExprPtr innerIdx = mul(mod(e, index(vectorsPerRow)), index(lanes));
    ExprPtr outerIdx = div(e, index(vectorsPerRow));
    ExprPtr f = op.contiguousInK ? outerIdx : innerIdx;
    ExprPtr kk = op.contiguousInK ? innerIdx : outerIdx;
    ExprPtr free = add(free0, f), k = add(k0, kk);
    ExprPtr inTile = (u + 1) * threads_ > vectors ? lt(e, index(vectors)) : nullptr;
    // Which elements may lie outside the problem: rows past the free extent, k past K, the
    // tile after the last one (prefetch), and this thread's share past the tile.
    ExprPtr inside = tileValid;
    auto both = [](ExprPtr x, ExprPtr y) { return x ? (y ? logicalAnd(x, y) : x) : y; };
    if (op.freeExtent % op.freeTile != 0 || op.freeExtent < op.freeTile)
      inside = both(inside, lt(free, index(op.freeExtent)));
    if (p_.k % bk_ != 0)
      inside = both(inside, lt(k, index(p_.k)));
    inside = both(inside, inTile);
    // Indices are clamped into the problem so every read is in bounds even where the
    // element is replaced by zero (a select evaluates both arms).
    ExprPtr value;
    if (lanes > 1) {
      bool kContiguous = op.contiguousInK;
      ExprPtr freeAt = kContiguous ? min(free, index(op.freeExtent - 1))
                                   : min(free, index(op.freeExtent - lanes));
      ExprPtr kAt = kContiguous ? min(k, index(p_.k - lanes)) : min(k, index(p_.k - 1));
      ExprPtr raw = load(op.dense->buffer, op.dense->offset(b, freeAt, kAt), lanes);
      value = cast(raw, accType_.withLanes(lanes));
      if (inside)
        value = select(broadcast(inside, lanes), value, zero(lanes));
    } else {
      ExprPtr freeAt = min(free, index(op.freeExtent - 1));
      ExprPtr kAt = min(k, index(p_.k - 1));
      value = cast(op.element(b, freeAt, kAt), accType_);
      if (inside)
        value = select(inside, value, zero());
    }
    loads.push_back({value, sharedIndex(op, f, kk), inTile});
  }
  return loads;
}

StmtPtr GpuGemmBuilder::storeTile(const Operand &op, const std::vector<TileLoad> &loads,
                                  const std::vector<ExprPtr> &values, const ExprPtr &stage) const {
  std::vector<StmtPtr> stores;
  ExprPtr base = mul(stage, index(stageSize(op)));
  for (size_t u = 0; u < loads.size(); ++u) {
    StmtPtr st = store(op.shared, add(base, loads[u].sharedIndex), values[u]);
    stores.push_back(loads[u].inTile ? ifThen(loads[u].inTile, st) : st);
  }
  return seq(std::move(stores));
}

StmtPtr GpuGemmBuilder::loadAndStore(const ExprPtr &b, const ExprPtr &tile,
                                     const ExprPtr &stage) const {
  std::vector<StmtPtr> stmts;
  for (const Operand *op : {&a_, &b_}) {
    ExprPtr free0 = op == &a_ ? i0_ : j0_;
    std::vector<TileLoad> loads = tileLoads(*op, b, free0, tile, nullptr);
    std::vector<ExprPtr> values;
    for (const TileLoad &l : loads)
      values.push_back(l.value);
    stmts.push_back(storeTile(*op, loads, values, stage));
  }
  return seq(std::move(stmts));
}

// acc[r][c] += A[ty*tm + r][k] * B[k][tx*tn + c] for every k of the staged tile; the fragments
// are bound to lets so each shared element is read once per k.
StmtPtr GpuGemmBuilder::compute(const ExprPtr &stage) const {
  VarPtr k = makeVar(name("kk"));
  ExprPtr kk = kir::ref(k);
  ExprPtr aBase = mul(stage, index(stageSize(a_))), bBase = mul(stage, index(stageSize(b_)));
  std::vector<VarPtr> aVars, bVars;
  std::vector<StmtPtr> updates;
  for (int64_t r = 0; r < tm_; ++r)
    aVars.push_back(makeVar(fmt::format("{}_a{}", p_.name, r), accType_));
  for (int64_t c = 0; c < tn_; ++c)
    bVars.push_back(makeVar(fmt::format("{}_b{}", p_.name, c), accType_));
  for (int64_t r = 0; r < tm_; ++r)
    for (int64_t c = 0; c < tn_; ++c) {
      ExprPtr at = index(r * tn_ + c);
      ExprPtr old = load(acc_, at);
      ExprPtr updated = isFloat_ ? call(Intrinsic::Fma, {kir::ref(aVars[r]), kir::ref(bVars[c]), old})
                                 : add(old, mul(kir::ref(aVars[r]), kir::ref(bVars[c])));
      updates.push_back(store(acc_, at, updated));
    }
  StmtPtr body = seq(std::move(updates));
  for (int64_t c = tn_; c-- > 0;) {
    ExprPtr j = add(mul(tx_, index(tn_)), index(c));
    body = let(bVars[c], load(b_.shared, add(bBase, sharedIndex(b_, j, kk))), body);
  }
  for (int64_t r = tm_; r-- > 0;) {
    ExprPtr i = add(mul(ty_, index(tm_)), index(r));
    body = let(aVars[r], load(a_.shared, add(aBase, sharedIndex(a_, i, kk))), body);
  }
  return forRange(k, bk_, ForKind::Serial, body);
}

StmtPtr GpuGemmBuilder::mainLoop(const ExprPtr &b, const ExprPtr &firstTile,
                                 const ExprPtr &tileCount) const {
  if (numK_ == 0)
    return nullptr;
  VarPtr t = makeVar(name("kt"));
  ExprPtr tile = kir::ref(t);
  auto global = [&](ExprPtr local) { return add(firstTile, std::move(local)); };
  if (s_.stages == 1) {
    StmtPtr step =
        seq({loadAndStore(b, global(tile), index(0)), barrier(), compute(index(0)), barrier()});
    return forLoop(t, index(0), tileCount, ForKind::Serial, step);
  }
  // Double buffering: tile t lives in stage t % 2. The prologue stages tile 0; each step
  // issues tile t+1's global loads (lets), computes on stage t % 2, then stores tile t+1 into
  // the other stage, which no thread reads until after the step's barrier. (Every split has
  // a tile: the schedule's split leaves none empty.)
  StmtPtr prologue = seq({loadAndStore(b, global(index(0)), index(0)), barrier()});
  ExprPtr next = add(tile, index(1));
  ExprPtr hasNext = lt(next, tileCount);
  ExprPtr current = mod(tile, index(2)), other = mod(next, index(2));
  std::vector<std::pair<VarPtr, ExprPtr>> lets;
  std::vector<StmtPtr> stores;
  for (const Operand *op : {&a_, &b_}) {
    ExprPtr free0 = op == &a_ ? i0_ : j0_;
    std::vector<TileLoad> loads = tileLoads(*op, b, free0, global(next), hasNext);
    std::vector<ExprPtr> values;
    for (size_t u = 0; u < loads.size(); ++u) {
      VarPtr v = makeVar(fmt::format("{}_next_{}{}", p_.name, op->name, u), loads[u].value->type());
      lets.emplace_back(v, loads[u].value);
      values.push_back(kir::ref(v));
    }
    stores.push_back(storeTile(*op, loads, values, other));
  }
  StmtPtr step = seq({compute(current), ifThen(hasNext, seq(std::move(stores))), barrier()});
  for (size_t n = lets.size(); n-- > 0;)
    step = let(lets[n].first, lets[n].second, step);
  return seq({prologue, forLoop(t, index(0), tileCount, ForKind::Serial, step)});
}

// Each valid (i, j) of the thread's tile: the epilogue, or with split-K the block's partials.
Expected<StmtPtr> GpuGemmBuilder::epilogue(const GemmGrid &grid, const SplitKPlan &split) const {
  std::vector<StmtPtr> stmts;
  for (int64_t r = 0; r < tm_; ++r)
    for (int64_t c = 0; c < tn_; ++c) {
      ExprPtr i = add(i0_, add(mul(ty_, index(tm_)), index(r)));
      ExprPtr j = add(j0_, add(mul(tx_, index(tn_)), index(c)));
      std::vector<ExprPtr> bij{grid.batch(), i, j};
      KILN_TRY(StmtPtr st,
               split.storeBlockResult(grid.split(), bij, load(acc_, index(r * tn_ + c))));
      stmts.push_back(guardEdges(p_, bm_, bn_, i, j, st));
    }
  return seq(std::move(stmts));
}

Expected<StmtPtr> GpuGemmBuilder::threadBody(const GemmGrid &grid, const SplitKPlan &split) {
  acc_ = makeBuffer(name("acc"), p_.accumulate, tm_ * tn_, MemScope::Register);
  std::vector<StmtPtr> init;
  for (int64_t x = 0; x < tm_ * tn_; ++x)
    init.push_back(store(acc_, index(x), zero()));
  KILN_TRY(StmtPtr tail, epilogue(grid, split));
  StmtPtr loop =
      mainLoop(grid.batch(), split.firstTile(grid.split()), split.tileCount(grid.split()));
  return allocate(acc_, seq({seq(std::move(init)), loop, tail}));
}

Expected<GemmLowering> GpuGemmBuilder::build() {
  VarPtr tid = makeVar(name("tid")), ty = makeVar(name("ty")), tx = makeVar(name("tx"));
  tid_ = kir::ref(tid);
  ty_ = kir::ref(ty);
  tx_ = kir::ref(tx);
  SplitKPlan split(p_, s_.splitK, bk_);
  GemmGrid grid(p_, bm_, bn_, p_.name, split.splits());
  if (grid.empty())
    return idleGemm(tid);
  i0_ = grid.row0();
  j0_ = grid.col0();
  KILN_TRY(StmtPtr body, threadBody(grid, split));
  body = let(ty, div(tid_, index(threadsN_)), let(tx, mod(tid_, index(threadsN_)), body));
  body = forRange(tid, threads_, ForKind::ThreadX, grid.onlyLive(p_, body));
  body = allocate(a_.shared, allocate(b_.shared, body));
  GemmLowering lowered{grid.wrap(body), {}, {}};
  KILN_TRY_VOID(split.finish(lowered));
  return lowered;
}

} // namespace

Expected<GemmLowering> lowerGpuGemm(const GemmProblem &problem, const GemmShape &shape,
                                    const GpuMatMulSchedule &schedule,
                                    const codegen::GpuTarget &target) {
  if (schedule.tensorCores())
    return lowerGpuMmaGemm(problem, shape, schedule, target);
  KILN_TRY_VOID(checkGpuGemmSchedule(schedule, problem.accumulate, target));
  if (std::optional<std::string> why = splitKProblem(schedule.splitK, problem.k, schedule.blockK))
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("GPU GEMM schedule {}: {}", scheduleStr(Schedule{schedule}), *why));
  return GpuGemmBuilder(problem, schedule).build();
}

} // namespace kiln::lower
