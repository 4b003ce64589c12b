// The builder behind lowerGpuMmaGemm (GpuMmaGemm.h). GpuMmaGemm.cpp holds what every strategy
// shares (operand tiles, swizzle and copies, accumulators and fragments, epilogue, persistent
// walk, build()); each strategy's K loop has its own file -- MmaSyncMainloop.cpp (with the
// fragment loads), WgmmaMainloop.cpp, TmaMainloop.cpp -- and mainLoop() picks one.
#pragma once

#include "codegen/Target.h"
#include "ir/kernel/Builder.h"
#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/TensorMap.h"
#include "ir/kernel/WgmmaLayout.h"
#include "passes/lower/GemmTemplate.h"
#include "passes/lower/GpuSchedule.h"
#include "passes/lower/gpu/GemmGrid.h"

#include <fmt/format.h>

#include <functional>
#include <optional>
#include <string>

namespace kiln::lower::tensorcore {

using namespace kir;

/// One operand's tiles in shared memory: `rows` x `inner` elements per stage, the operand's
/// contiguous axis (K, or the free axis i/j) inner, each row split into 16-byte chunks whose
/// order is XOR-swizzled by row so that the 8 rows an ldmatrix (or a fragment load) reads
/// fall in 8 different bank groups. For wgmma the inner axis is cut into panels of 128 bytes
/// stored one after another (all rows of panel 0, then of panel 1, ...): the canonical
/// 128-byte swizzled layout of ir/kernel/WgmmaLayout.h, whose XOR is exactly this one.
struct TileOperand {
  std::string name;
  int64_t freeTile = 0, freeExtent = 0;
  bool contiguousInK = true;
  BufferPtr buffer;
  /// The element offset of (b, free, k) and whether it is inside the operand (nullptr: always).
  std::function<std::pair<ExprPtr, ExprPtr>(ExprPtr b, ExprPtr free, ExprPtr k)> address;
  int64_t run = 1; ///< elements of the contiguous axis that are contiguous in memory
  BufferPtr shared;
  int64_t rows = 0, inner = 0;
  int64_t panel = 0; ///< inner elements per panel (all of them but for wgmma)
  int lanes = 1; ///< elements per async copy
  TensorMapPtr map; ///< tma: the operand as a tensor map, one box a panel of a stage
};

/// How a block's K loop feeds the tensor cores: the schedule's choice (GpuMatMulSchedule's
/// wgmma and tma), made once in the builder's constructor.
enum class Mainloop {
  MmaSync,      ///< every thread's cp.async copies, a barrier per K tile, mma.sync per warp
  CpAsyncWgmma, ///< the same copies, fenced for the async proxy; wgmma per warpgroup
  Tma,          ///< a producer thread's bulk tensor copies on mbarriers; wgmma consumers
};

class MmaGemmBuilder {
public:
  /// `wgmmaKind` set: warpgroup products, whose operand dtype and k are those of `kind`.
  MmaGemmBuilder(const GemmProblem &problem, const GpuMatMulSchedule &schedule, MmaKind kind,
                 std::optional<WgmmaKind> wgmmaKind, const codegen::GpuTarget &target);

  Expected<GemmLowering> build();

private:
  std::string name(std::string_view suffix) const { return fmt::format("{}_{}", p_.name, suffix); }

  // ---- shared by every strategy (GpuMmaGemm.cpp)
  TileOperand makeOperand(std::string operandName, int64_t freeTile, int64_t freeExtent,
                          bool contiguousInK) const;
  int64_t stageSize(const TileOperand &op) const { return op.rows * op.inner; }
  /// The element index within a stage of (row, col), col a multiple of the copy or chunk width.
  ExprPtr swizzled(const TileOperand &op, const ExprPtr &row, const ExprPtr &col) const;
  /// The async copies of tile `tile` of `op` into stage `stage`.
  StmtPtr copyTile(const TileOperand &op, const ExprPtr &b, const ExprPtr &free0,
                   const ExprPtr &tile, const ExprPtr &stage) const;
  StmtPtr copyTiles(const ExprPtr &b, const ExprPtr &tile, const ExprPtr &stage) const;
  /// The cp.async pipeline of the MmaSync and CpAsyncWgmma loops: the prologue's copies of
  /// the first `ahead` tiles, then a loop whose step the strategy builds around `issueNext`
  /// (the copies of tile + ahead and their commit); nothing for a known count of no tiles.
  using TileStepFn = std::function<StmtPtr(const ExprPtr &tile, StmtPtr issueNext)>;
  std::vector<StmtPtr> cpAsyncPipeline(const ExprPtr &b, const ExprPtr &firstTile,
                                       const ExprPtr &tileCount, int64_t ahead,
                                       const TileStepFn &tileStep) const;
  /// The K tiles [firstTile, firstTile + tileCount) of the block's output tile, by the
  /// strategy's loop (for Tma, the consumers' side; the producer is producerLoop).
  StmtPtr mainLoop(const ExprPtr &b, const ExprPtr &firstTile, const ExprPtr &tileCount) const;
  StmtPtr zeroAccumulators() const;
  /// The statements atElement(i, j, value) makes for every accumulator value at its output
  /// row i and column j, each guarded at the problem's edges.
  template <typename Fn> Expected<StmtPtr> forEachAccumulator(Fn &&atElement) const;
  Expected<StmtPtr> epilogue(const ExprPtr &b) const;
  /// tma persistent: the producer and the consumers, each walking the block's output tiles.
  Expected<StmtPtr> persistentRoles(const GemmGrid &grid, const ExprPtr &block, int64_t blocks,
                                    const std::function<StmtPtr(StmtPtr)> &consumerScope);

  // ---- cp.async + mma.sync (MmaSyncMainloop.cpp)
  StmtPtr mmaSyncMainLoop(const ExprPtr &b, const ExprPtr &firstTile,
                          const ExprPtr &tileCount) const;
  /// Loads the fragments of k step `ks` of stage `stage` and runs every product of the warp.
  StmtPtr computeStep(const ExprPtr &stage, int64_t ks) const;
  /// Whether `op`'s fragments come by ldmatrix: 16-bit elements either way round, 8-bit ones
  /// (read as byte pairs, which .trans would split) only K-contiguous; never tf32.
  bool usesLdMatrix(const TileOperand &op) const {
    return kind_ != MmaKind::TF32_M16N8K8 && (dtypeByteSize(dtype_) == 2 || op.contiguousInK);
  }
  StmtPtr loadFragmentsA(const ExprPtr &stageBase, int64_t k0) const;
  StmtPtr loadFragmentsB(const ExprPtr &stageBase, int64_t k0) const;

  // ---- cp.async + wgmma (WgmmaMainloop.cpp; wgmmaStep is the Tma consumers' too)
  StmtPtr wgmmaMainLoop(const ExprPtr &b, const ExprPtr &firstTile,
                        const ExprPtr &tileCount) const;
  /// The warpgroup's products of k step `ks` of stage `stage`.
  StmtPtr wgmmaStep(const ExprPtr &stage, int64_t ks) const;
  /// The shared operand of a wgmma whose first element is (free0, k0) of `op`'s stage.
  SharedMatrix sharedMatrix(const TileOperand &op, const ExprPtr &stageBase, const ExprPtr &free0,
                            int64_t k0) const;
  /// Whether wgmma products stay in flight across a K tile of the cp.async loop (one group,
  /// with 3+ stages). The tma consumers always keep one: the mbarriers hand a stage back only
  /// once its group retires.
  int64_t wgmmaInFlight() const { return wgmma_ && s_.stages >= 3 ? 1 : 0; }

  // ---- TMA producer / wgmma consumers (TmaMainloop.cpp)
  /// The producer's bulk copies of tile `tile` into stage `stage`.
  StmtPtr tmaCopies(const ExprPtr &b, const ExprPtr &tile, const ExprPtr &stage) const;
  /// `pipelined` counts the K tiles this block's pipeline ran before these (a persistent
  /// block's earlier output tiles): stages and phases go on from there.
  StmtPtr producerLoop(const ExprPtr &b, const ExprPtr &firstTile, const ExprPtr &tileCount,
                       const ExprPtr &pipelined) const;
  /// `releaseLast`: hand the last tile's stage back too (a persistent block's producer goes
  /// on into the next output tile).
  StmtPtr consumerLoop(const ExprPtr &tileCount, const ExprPtr &pipelined,
                       bool releaseLast) const;
  /// A tma kernel's block: thread 0 sets the mbarriers up, then runs `produce`; threads from
  /// 128 on run `consume`.
  StmtPtr tmaRoles(StmtPtr produce, StmtPtr consume) const;
  /// The stage and the phase parity (round % 2) of pipeline iteration `it`.
  ExprPtr stageOf(const ExprPtr &it) const { return mod(it, index(s_.stages)); }
  ExprPtr parityOf(const ExprPtr &it) const {
    return mod(div(it, index(s_.stages)), index(2));
  }
  ExprPtr fullBarrier(const ExprPtr &stage) const { return stage; }
  ExprPtr emptyBarrier(const ExprPtr &stage) const { return add(stage, index(s_.stages)); }
  int64_t consumerGroups() const { return (s_.blockM / s_.warpM) * (s_.blockN / s_.warpN); }

  const GemmProblem &p_;
  GpuMatMulSchedule s_;
  MmaKind kind_;
  std::optional<WgmmaKind> wgmma_;
  Mainloop mainloop_;
  const MmaShapeInfo &info_;
  DType dtype_;
  const codegen::GpuTarget &target_;
  int64_t chunk_, warpsN_, threads_, numK_, tilesM_, tilesN_;
  TileOperand a_, b_;
  BufferPtr acc_, aFrag_, bFrag_;
  BufferPtr barriers_; ///< tma: full[stages] then empty[stages]
  ExprPtr threadIndex_; ///< tma: the block's thread index (tid_ counts from the consumers)
  ExprPtr tid_, lane_, group_, threadInGroup_, warpRow0_, warpCol0_, i0_, j0_;
  ExprPtr warpInGroup_; ///< wgmma: the warp's index within its warpgroup
};

} // namespace kiln::lower::tensorcore
