#include "passes/lower/gpu/GemmGrid.h"

#include "ir/kernel/Builder.h"
#include "passes/lower/LowerUtil.h"

#include <algorithm>
#include <tuple>

namespace kiln::lower {

using namespace kir;

namespace {
/// CUDA's limit on gridDim.y and gridDim.z (x allows 2^31 - 1).
constexpr int64_t kMaxGridYZ = 65535;

} // namespace

GemmGrid::GemmGrid(const GemmProblem &problem, int64_t blockM, int64_t blockN,
                   const std::string &prefix, int64_t splits, int64_t groupM)
    : batch_(problem.batch), blockM_(blockM), blockN_(blockN),
      tilesM_(ceilDiv(problem.m, blockM)),
      tilesN_(ceilDiv(problem.n, blockN)), splits_(splits),
      groupM_(std::min(std::max<int64_t>(groupM, 1), tilesM_)) {
  // Grid z (or the slowest part of a folded x) counts (batch, split) pairs, split fastest.
  int64_t layers = batch_ * splits_;
  blocks_ = layers * tilesM_ * tilesN_;
  bx_ = makeVar(prefix + "_bx");
  by_ = makeVar(prefix + "_by");
  bz_ = makeVar(prefix + "_bz");
  folded_ = tilesM_ > kMaxGridYZ || layers > kMaxGridYZ;
  ExprPtr layer;
  ExprPtr tileM, tileN;
  if (folded_) {
    // Every tile on grid x: the tiles of a layer in order, then (batch, split).
    ExprPtr v = kir::ref(bx_);
    std::tie(tileM, tileN) = tileOf(mod(v, index(tilesN_ * tilesM_)));
    layer = div(v, index(tilesN_ * tilesM_));
  } else if (groupM_ > 1) {
    std::tie(tileM, tileN) = tileOf(add(mul(kir::ref(by_), index(tilesN_)), kir::ref(bx_)));
    layer = layers == 1 ? index(0) : kir::ref(bz_);
  } else {
    tileN = kir::ref(bx_);
    tileM = tilesM_ == 1 ? index(0) : kir::ref(by_);
    layer = layers == 1 ? index(0) : kir::ref(bz_);
  }
  j0_ = mul(tileN, index(blockN));
  i0_ = mul(tileM, index(blockM));
  b_ = batch_ == 1 ? index(0) : splits_ == 1 ? layer : div(layer, index(splits_));
  split_ = splits_ == 1 ? index(0) : mod(layer, index(splits_));
}

// Groups of groupM rows of tiles (the last group may have fewer), each walked column by column.
std::pair<ExprPtr, ExprPtr> GemmGrid::tileOf(const ExprPtr &t) const {
  if (groupM_ <= 1)
    return {div(t, index(tilesN_)), mod(t, index(tilesN_))};
  ExprPtr group = div(t, index(groupM_ * tilesN_));
  ExprPtr firstM = mul(group, index(groupM_));
  ExprPtr rows = min(sub(index(tilesM_), firstM), index(groupM_));
  ExprPtr within = mod(t, index(groupM_ * tilesN_));
  return {add(firstM, mod(within, rows)), div(within, rows)};
}

GemmGrid::TileAt GemmGrid::tileAt(const ExprPtr &t) const {
  KILN_CHECK(splits_ == 1, "GemmGrid::tileAt walks tiles without a K split");
  const int64_t perLayer = tilesM_ * tilesN_;
  auto [tileM, tileN] = tileOf(perLayer == blocks_ ? t : mod(t, index(perLayer)));
  ExprPtr b = batch_ == 1 ? index(0) : div(t, index(perLayer));
  return {b, mul(tileM, index(blockM_)), mul(tileN, index(blockN_))};
}

StmtPtr GemmGrid::wrap(StmtPtr body) const {
  if (folded_)
    return forRange(bx_, blocks_, ForKind::BlockX, body);
  body = forRange(bx_, tilesN_, ForKind::BlockX, body);
  if (tilesM_ > 1)
    body = forRange(by_, tilesM_, ForKind::BlockY, body);
  if (batch_ * splits_ > 1)
    body = forRange(bz_, batch_ * splits_, ForKind::BlockZ, body);
  return body;
}

StmtPtr GemmGrid::onlyLive(const GemmProblem &problem, StmtPtr body) const {
  ExprPtr live;
  if (problem.runtimeM)
    live = lt(i0_, problem.runtimeM);
  if (problem.runtimeBatch && batch_ > 1) {
    ExprPtr batchLive = lt(b_, problem.runtimeBatch);
    live = live ? logicalAnd(live, batchLive) : batchLive;
  }
  return live ? ifThen(live, body) : body;
}

GemmLowering idleGemm(const VarPtr &thread) {
  StmtPtr idle = std::make_shared<Block>(std::vector<StmtPtr>{});
  return GemmLowering{forRange(thread, 1, ForKind::ThreadX, idle), {}, {}};
}

StmtPtr guardEdges(const GemmProblem &problem, int64_t blockM, int64_t blockN, const ExprPtr &i,
                   const ExprPtr &j, StmtPtr store) {
  ExprPtr guard;
  if (problem.runtimeM) // the run's rows only (a symbolic batch)
    guard = lt(i, problem.runtimeM);
  else if (problem.m % blockM != 0)
    guard = lt(i, index(problem.m));
  if (problem.n % blockN != 0)
    guard = guard ? logicalAnd(guard, lt(j, index(problem.n))) : lt(j, index(problem.n));
  return guard ? ifThen(guard, store) : store;
}

} // namespace kiln::lower
