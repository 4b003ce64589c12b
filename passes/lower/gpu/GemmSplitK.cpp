#include "passes/lower/gpu/GemmSplitK.h"

#include "ir/kernel/Builder.h"
#include "passes/lower/LowerUtil.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::lower {

using namespace kir;

namespace {


constexpr double kPipelineFillTiles = 3.0;
constexpr double kSplitLaunchTiles = 8.0;
constexpr double kPartialBytesPerTile = 1 << 20;
constexpr int64_t kSumThreads = 256;
/// The consecutive output elements a thread of the sum kernel adds up: four f32 partials,
/// one 16-byte load of each layer.
constexpr int64_t kSumRun = 4;

} // namespace

std::optional<std::string> splitKProblem(int64_t splits, int64_t k, int64_t blockK) {
  if (splits < 1 || splits > kMaxSplitK)
    return fmt::format("splitK must be 1 to {}", kMaxSplitK);
  if (splits == 1)
    return std::nullopt;
  int64_t tiles = blockK > 0 ? ceilDiv(k, blockK) : 0;
  if (tiles == 0 || (splits - 1) * ceilDiv(tiles, splits) >= tiles)
    return fmt::format("splitK {} leaves a split without K tiles (K = {} is {} tiles of {})",
                       splits, k, tiles, blockK);
  return std::nullopt;
}

SplitKEstimate estimateSplitK(int64_t blocks, int64_t kTiles, int64_t splits,
                              const GemmShape &shape, int64_t numSms) {
  int64_t waves = ceilDiv(std::max<int64_t>(blocks * splits, 1), numSms);
  SplitKEstimate estimate;
  estimate.compute =
      double(waves) * (double(ceilDiv(std::max<int64_t>(kTiles, 1), splits)) + kPipelineFillTiles);
  if (splits > 1) {
    double partialBytes = 2.0 * double(splits) * double(shape.batch * shape.m * shape.n) *
                          dtypeByteSize(shape.accumulate);
    estimate.overhead = kSplitLaunchTiles + partialBytes / kPartialBytesPerTile;
  }
  return estimate;
}

int chooseSplitK(int64_t blocks, int64_t blockK, const GemmShape &shape, int64_t numSms) {
  if (blocks >= numSms)
    return 1;
  int64_t kTiles = ceilDiv(std::max<int64_t>(shape.k, 1), blockK);
  int best = 1;
  auto total = [](const SplitKEstimate &e) { return e.compute + e.overhead; };
  double bestTime = total(estimateSplitK(blocks, kTiles, 1, shape, numSms));
  for (int splits = 2; splits <= kMaxSplitK; ++splits) {
    if (splitKProblem(splits, shape.k, blockK) || ceilDiv(kTiles, splits) < kMinTilesPerSplit)
      continue;
    double time = total(estimateSplitK(blocks, kTiles, splits, shape, numSms));
    if (time < bestTime * (1.0 - 1e-9)) {
      bestTime = time;
      best = splits;
    }
  }
  return best;
}

SplitKPlan::SplitKPlan(const GemmProblem &problem, int64_t splits, int64_t blockK)
    : p_(problem), splits_(splits) {
  tiles_ = problem.k == 0 ? 0 : ceilDiv(problem.k, blockK);
  perSplit_ = ceilDiv(tiles_, splits_);
  KILN_CHECK(!splitKProblem(splits_, problem.k, blockK), "an illegal split-K reached lowering");
  if (splits_ > 1)
    partials_ = makeBuffer(problem.name + "_partials", problem.accumulate,
                           splits_ * problem.batch * problem.m * problem.n);
}

ExprPtr SplitKPlan::firstTile(const ExprPtr &split) const {
  return splits_ == 1 ? index(0) : mul(split, index(perSplit_));
}

ExprPtr SplitKPlan::tileCount(const ExprPtr &split) const {
  if (splits_ == 1)
    return index(tiles_);
  if (tiles_ % perSplit_ == 0)
    return index(perSplit_);
  return min(index(perSplit_), sub(index(tiles_), firstTile(split)));
}

Expected<StmtPtr> SplitKPlan::storeBlockResult(const ExprPtr &split,
                                               std::span<const ExprPtr> bij, ExprPtr acc) const {
  if (splits_ == 1)
    return p_.storeResult(bij, std::move(acc));
  ExprPtr layer = add(mul(split, index(p_.batch)), bij[0]);
  ExprPtr at = add(mul(add(mul(layer, index(p_.m)), bij[1]), index(p_.n)), bij[2]);
  return store(partials_, at, std::move(acc));
}

int64_t SplitKPlan::sumRun() const { return p_.n % kSumRun == 0 ? kSumRun : 1; }

Expected<StmtPtr> SplitKPlan::sumKernel() const {
  // A thread takes `run` consecutive elements of one output row (N is a multiple of the run),
  // so its loads of a layer, and its result's stores, are adjacent and aligned: LLVM makes
  // one 16-byte load of each layer instead of four.
  const int64_t elements = p_.batch * p_.m * p_.n, run = sumRun();
  VarPtr block = makeVar(p_.name + "_sum_bx"), thread = makeVar(p_.name + "_sum_tid");
  VarPtr first = makeVar(p_.name + "_sum_e");
  ExprPtr e = kir::ref(first);
  std::vector<ExprPtr> bij{div(e, index(p_.m * p_.n)), mod(div(e, index(p_.n)), index(p_.m)),
                           mod(e, index(p_.n))};
  std::vector<StmtPtr> stores;
  for (int64_t u = 0; u < run; ++u) {
    ExprPtr at = add(e, index(u));
    ExprPtr sum = load(partials_, at);
    for (int64_t split = 1; split < splits_; ++split)
      sum = add(sum, load(partials_, add(index(split * elements), at)));
    std::vector<ExprPtr> element{bij[0], bij[1], add(bij[2], index(u))};
    KILN_TRY(StmtPtr stored, p_.storeResult(element, sum));
    stores.push_back(stored);
  }
  StmtPtr body = seq(std::move(stores));
  // The run divides N, so a thread's first element inside the output means all of its are.
  if (elements % (kSumThreads * run) != 0)
    body = ifThen(lt(e, index(elements)), body);
  body = let(first, mul(add(mul(kir::ref(block), index(kSumThreads)), kir::ref(thread)), index(run)),
             body);
  body = forRange(thread, kSumThreads, ForKind::ThreadX, body);
  return forRange(block, ceilDiv(elements, kSumThreads * run), ForKind::BlockX, body);
}

Expected<void> SplitKPlan::finish(GemmLowering &lowering) const {
  if (splits_ == 1)
    return {};
  KILN_TRY(StmtPtr sum, sumKernel());
  lowering.workspaces.push_back(partials_);
  lowering.followUps.emplace_back("splitk_sum", sum);
  return {};
}

} // namespace kiln::lower
