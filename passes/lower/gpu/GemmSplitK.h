// Split-K, shared by the GPU GEMM templates (tensor cores and CUDA cores): a GEMM whose output
// tiles leave SMs idle splits its K tiles over `splits` blocks per tile. Each block stores its
// accumulators into a layer of a partial-sum workspace; a second kernel adds the layers in
// split order (so every run gives the same bits) and runs the epilogue. See
// docs/gpu-tensor-cores.md#split-k.
#pragma once

#include "ir/kernel/KernelIR.h"
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/GemmTemplate.h"
#include "support/Error.h"

#include <optional>
#include <span>
#include <string>

namespace kiln::lower {

/// The most blocks one output tile's K range is split over.
inline constexpr int kMaxSplitK = 16;
/// The fewest K tiles a split of a heuristic default keeps, so its pipeline runs past the fill.
inline constexpr int64_t kMinTilesPerSplit = 4;

/// Why `splits` cannot split K = `k` in tiles of `blockK` (nullopt: it can): 1 to kMaxSplitK
/// splits, each ceil(tiles / splits) tiles but the last, which must keep at least one.
std::optional<std::string> splitKProblem(int64_t splits, int64_t k, int64_t blockK);

/// The heuristic's estimate for `blocks` output tiles over `kTiles` K tiles in `splits`, in
/// K tiles of one block: full waves of blocks over `numSms`, each running its split's tiles
/// plus about three of pipeline fill and epilogue (`compute`), and for a split the second
/// launch and the partials' round trip (`overhead`, about 8 tiles plus 1 MiB a tile).
struct SplitKEstimate {
  double compute = 0, overhead = 0;
};
SplitKEstimate estimateSplitK(int64_t blocks, int64_t kTiles, int64_t splits,
                              const GemmShape &shape, int64_t numSms);

/// The split of least estimated time for `blocks` tiles (1 when they fill a wave), each split
/// keeping at least kMinTilesPerSplit K tiles.
int chooseSplitK(int64_t blocks, int64_t blockK, const GemmShape &shape, int64_t numSms);

/// One lowering's split: the K range of each split and the partial-sum workspace.
class SplitKPlan {
public:
  /// `splits` must be legal for the problem (splitKProblem).
  SplitKPlan(const GemmProblem &problem, int64_t splits, int64_t blockK);

  int64_t splits() const { return splits_; }
  /// The first K tile of split `split`, and how many it runs (a constant unless the last
  /// split is short).
  kir::ExprPtr firstTile(const kir::ExprPtr &split) const;
  kir::ExprPtr tileCount(const kir::ExprPtr &split) const;
  /// The workspace [splits][batch][m][n] in the accumulate dtype (splits > 1 only).
  const kir::BufferPtr &partials() const { return partials_; }
  /// What a block of split `split` does with its finished accumulator `acc` of output
  /// (b, i, j): with K split, stores it into the split's layer of the partial sums; else runs
  /// the problem's storeResult (the epilogue).
  Expected<kir::StmtPtr> storeBlockResult(const kir::ExprPtr &split,
                                          std::span<const kir::ExprPtr> bij,
                                          kir::ExprPtr acc) const;
  /// The second kernel's body: a thread per sumRun() consecutive output elements adds each
  /// one's partials in split order and runs the problem's storeResult.
  Expected<kir::StmtPtr> sumKernel() const;
  /// The elements a thread of the sum kernel takes: 4 when N is a multiple of 4, else 1.
  int64_t sumRun() const;
  /// Adds the workspace and the sum kernel to a template's lowering.
  Expected<void> finish(GemmLowering &lowering) const;

private:
  const GemmProblem &p_;
  int64_t splits_, tiles_, perSplit_;
  kir::BufferPtr partials_;
};

} // namespace kiln::lower
