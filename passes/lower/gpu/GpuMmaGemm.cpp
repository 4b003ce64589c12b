// The tensor-core GEMM template (see GpuMmaGemm.h and docs/gpu-tensor-cores.md).
#include "passes/lower/gpu/GpuMmaGemm.h"

#include "ir/kernel/Builder.h"
#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/TensorMap.h"
#include "ir/kernel/WgmmaLayout.h"
#include "passes/lower/gpu/GemmGrid.h"
#include "passes/lower/gpu/GemmSplitK.h"
#include "passes/lower/gpu/GpuMmaSchedule.h"
#include "passes/lower/gpu/GpuWgmmaSchedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace kiln::lower {
namespace {

using namespace kir;

int64_t ceilDivide(int64_t a, int64_t b) { return (a + b - 1) / b; }

ExprPtr bitXor(ExprPtr a, ExprPtr b) {
  // a ^ b = (a | b) - (a & b): kernel IR has bitwise and/or on integers, no xor.
  return sub(binary(BinaryOp::Or, a, b), binary(BinaryOp::And, a, b));
}

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

class MmaGemmBuilder {
public:
  MmaGemmBuilder(const GemmProblem &problem, const GpuMatMulSchedule &schedule, MmaKind kind,
                 std::optional<WgmmaKind> wgmmaKind, const codegen::GpuTarget &target)
      : p_(problem), s_(schedule), kind_(kind), wgmma_(wgmmaKind), info_(mmaShapeInfo(kind)),
        dtype_(info_.operandDtype), target_(target) {
    chunk_ = 16 / dtypeByteSize(dtype_);
    warpsN_ = s_.blockN / s_.warpN;
    threads_ = gpuMmaThreads(s_);
    numK_ = p_.k == 0 ? 0 : ceilDivide(p_.k, s_.blockK);
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
    if (s_.tma && p_.aDense && p_.bDense) {
      a_.map = operandTensorMap(name("a_map"), *p_.aDense, true, a_.contiguousInK, p_.batch,
                                p_.m, p_.k, a_.panel, a_.contiguousInK ? a_.rows : s_.blockK);
      b_.map = operandTensorMap(name("b_map"), *p_.bDense, false, b_.contiguousInK, p_.batch,
                                p_.n, p_.k, b_.panel, b_.contiguousInK ? b_.rows : s_.blockK);
    }
  }

  Expected<GemmLowering> build();

private:
  std::string name(std::string_view suffix) const { return fmt::format("{}_{}", p_.name, suffix); }
  TileOperand makeOperand(std::string operandName, int64_t freeTile, int64_t freeExtent,
                          bool contiguousInK) const;
  int64_t stageSize(const TileOperand &op) const { return op.rows * op.inner; }
  /// The element index within a stage of (row, col), col a multiple of the copy or chunk width.
  ExprPtr swizzled(const TileOperand &op, const ExprPtr &row, const ExprPtr &col) const;
  /// The async copies of tile `tile` of `op` into stage `stage`.
  StmtPtr copyTile(const TileOperand &op, const ExprPtr &b, const ExprPtr &free0,
                   const ExprPtr &tile, const ExprPtr &stage) const;
  StmtPtr copyTiles(const ExprPtr &b, const ExprPtr &tile, const ExprPtr &stage) const;
  /// Loads the fragments of k step `ks` of stage `stage` and runs every product of the warp.
  StmtPtr computeStep(const ExprPtr &stage, int64_t ks) const;
  /// Whether `op`'s fragments come by ldmatrix: 16-bit elements either way round, 8-bit ones
  /// (read as byte pairs, which .trans would split) only K-contiguous; never tf32.
  bool usesLdMatrix(const TileOperand &op) const {
    return kind_ != MmaKind::TF32_M16N8K8 && (dtypeByteSize(dtype_) == 2 || op.contiguousInK);
  }
  /// The warpgroup's products of k step `ks` of stage `stage` (wgmma).
  StmtPtr wgmmaStep(const ExprPtr &stage, int64_t ks) const;
  /// The shared operand of a wgmma whose first element is (free0, k0) of `op`'s stage.
  SharedMatrix sharedMatrix(const TileOperand &op, const ExprPtr &stageBase, const ExprPtr &free0,
                            int64_t k0) const;
  /// The per-K-tile synchronization and products of the mma.sync and the wgmma loops.
  StmtPtr mmaTileStep(const ExprPtr &b, const ExprPtr &firstTile, const ExprPtr &tileCount,
                      const ExprPtr &tile, int64_t ahead) const;
  StmtPtr wgmmaTileStep(const ExprPtr &b, const ExprPtr &firstTile, const ExprPtr &tileCount,
                        const ExprPtr &tile, int64_t ahead) const;
  /// Whether wgmma products stay in flight across a K tile of the cp.async loop (one group,
  /// with 3+ stages). The tma consumers always keep one: the mbarriers hand a stage back only
  /// once its group retires.
  int64_t wgmmaInFlight() const { return wgmma_ && s_.stages >= 3 ? 1 : 0; }
  /// tma: the producer's bulk copies of tile `tile` into stage `stage`, and the two loops.
  StmtPtr tmaCopies(const ExprPtr &b, const ExprPtr &tile, const ExprPtr &stage) const;
  /// `pipelined` counts the K tiles this block's pipeline ran before these (a persistent
  /// block's earlier output tiles): stages and phases go on from there.
  StmtPtr producerLoop(const ExprPtr &b, const ExprPtr &firstTile, const ExprPtr &tileCount,
                       const ExprPtr &pipelined) const;
  /// `releaseLast`: hand the last tile's stage back too (a persistent block's producer goes
  /// on into the next output tile).
  StmtPtr consumerLoop(const ExprPtr &tileCount, const ExprPtr &pipelined,
                       bool releaseLast) const;
  /// The stage and the phase parity (round % 2) of pipeline iteration `it`.
  ExprPtr stageOf(const ExprPtr &it) const { return mod(it, index(s_.stages)); }
  ExprPtr parityOf(const ExprPtr &it) const {
    return mod(div(it, index(s_.stages)), index(2));
  }
  /// tma persistent: the producer and the consumers, each walking the block's output tiles.
  Expected<StmtPtr> persistentRoles(const GemmGrid &grid, const ExprPtr &block, int64_t blocks,
                                    const std::function<StmtPtr(StmtPtr)> &consumerScope);
  /// A tma kernel's block: thread 0 sets the mbarriers up, then runs `produce`; threads from
  /// 128 on run `consume`.
  StmtPtr tmaRoles(StmtPtr produce, StmtPtr consume) const;
  StmtPtr zeroAccumulators() const {
    std::vector<StmtPtr> stores;
    for (int64_t x = 0; x < acc_->size; ++x)
      stores.push_back(store(acc_, index(x), constant(0.0, Type::scalar(DType::F32))));
    return seq(std::move(stores));
  }
  ExprPtr fullBarrier(const ExprPtr &stage) const { return stage; }
  ExprPtr emptyBarrier(const ExprPtr &stage) const { return add(stage, index(s_.stages)); }
  int64_t consumerGroups() const { return (s_.blockM / s_.warpM) * (s_.blockN / s_.warpN); }
  StmtPtr loadFragmentsA(const ExprPtr &stageBase, int64_t k0) const;
  StmtPtr loadFragmentsB(const ExprPtr &stageBase, int64_t k0) const;
  /// The K tiles [firstTile, firstTile + tileCount) of the block's output tile.
  StmtPtr mainLoop(const ExprPtr &b, const ExprPtr &firstTile, const ExprPtr &tileCount) const;
  /// The statements atElement(i, j, value) makes for every accumulator value at its output
  /// row i and column j, each guarded at the problem's edges.
  template <typename Fn> Expected<StmtPtr> forEachAccumulator(Fn &&atElement) const;
  Expected<StmtPtr> epilogue(const ExprPtr &b) const;

  const GemmProblem &p_;
  GpuMatMulSchedule s_;
  MmaKind kind_;
  std::optional<WgmmaKind> wgmma_;
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
  int64_t perThread = ceilDivide(copies, threads_);
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

// Step t waits until at most ahead-1 copy groups are in flight (so tile t has landed for this
// thread), reaches a barrier (every thread's copies of tile t are visible, and every warp is
// done with the stage tile t+ahead overwrites), issues that tile and commits (a group even
// when empty, so the count stays uniform), then computes on tile t.
StmtPtr MmaGemmBuilder::mmaTileStep(const ExprPtr &b, const ExprPtr &firstTile,
                                    const ExprPtr &tileCount, const ExprPtr &tile,
                                    int64_t ahead) const {
  ExprPtr next = add(tile, index(ahead));
  std::vector<StmtPtr> step{asyncWait(static_cast<int>(ahead - 1)), barrier(),
                            ifThen(lt(next, tileCount),
                                   copyTiles(b, add(firstTile, next), mod(next, index(s_.stages)))),
                            asyncCommit()};
  ExprPtr current = mod(tile, index(s_.stages));
  for (int64_t ks = 0; ks < s_.blockK / info_.k; ++ks)
    step.push_back(computeStep(current, ks));
  return seq(std::move(step));
}

// As mmaTileStep, with the products reading shared memory through the async proxy: each
// thread fences its landed copies for it before the barrier. The warpgroup's products of
// tile t form one group; waiting until wgmmaInFlight() groups remain leaves tile t's products
// running into step t+1, whose barrier then guarantees only that tile t-1's are done -- which
// is why with one in flight the copies run ahead = stages - 2 tiles, never into the stage
// being read.
StmtPtr MmaGemmBuilder::wgmmaTileStep(const ExprPtr &b, const ExprPtr &firstTile,
                                      const ExprPtr &tileCount, const ExprPtr &tile,
                                      int64_t ahead) const {
  ExprPtr next = add(tile, index(ahead));
  std::vector<StmtPtr> step{asyncWait(static_cast<int>(ahead - 1)),
                            wgmmaSync(WgmmaSyncOp::SharedFence), barrier(),
                            ifThen(lt(next, tileCount),
                                   copyTiles(b, add(firstTile, next), mod(next, index(s_.stages)))),
                            asyncCommit(), wgmmaSync(WgmmaSyncOp::Fence)};
  ExprPtr current = mod(tile, index(s_.stages));
  for (int64_t ks = 0; ks < s_.blockK / info_.k; ++ks)
    step.push_back(wgmmaStep(current, ks));
  step.push_back(wgmmaSync(WgmmaSyncOp::Commit));
  step.push_back(wgmmaSync(WgmmaSyncOp::Wait, static_cast<int>(wgmmaInFlight())));
  return seq(std::move(step));
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

// Tile t lives in stage t % stages. The prologue issues tiles 0 .. ahead-1, a group each;
// step t (mmaTileStep / wgmmaTileStep) then keeps `ahead` tiles of copies in flight. Tiles are
// counted from `firstTile` (a split's first K tile); `tileCount` may vary by block.
StmtPtr MmaGemmBuilder::mainLoop(const ExprPtr &b, const ExprPtr &firstTile,
                                 const ExprPtr &tileCount) const {
  std::optional<int64_t> staticCount = constIntValue(tileCount);
  if (staticCount && *staticCount == 0)
    return nullptr;
  int64_t ahead = s_.stages - 1 - wgmmaInFlight();
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
  ExprPtr tile = kir::ref(tileVar);
  StmtPtr step = wgmma_ ? wgmmaTileStep(b, firstTile, tileCount, tile, ahead)
                        : mmaTileStep(b, firstTile, tileCount, tile, ahead);
  std::vector<StmtPtr> stmts{seq(std::move(prologue)),
                             forLoop(tileVar, index(0), tileCount, ForKind::Serial, step)};
  if (wgmmaInFlight() > 0)
    stmts.push_back(wgmmaSync(WgmmaSyncOp::Wait, 0)); // the last tile's products are done
  return seq(std::move(stmts));
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
  if (s_.tma) {
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
  if (grid.empty()) {
    StmtPtr idle = std::make_shared<Block>(std::vector<StmtPtr>{});
    return GemmLowering{forRange(tid, 1, ForKind::ThreadX, idle), {}, {}};
  }
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
    StmtPtr tail;
    if (split.splits() > 1) {
      KILN_TRY(tail, forEachAccumulator([&](ExprPtr i, ExprPtr j, ExprPtr value) -> Expected<StmtPtr> {
        return split.storePartial(grid.split(), grid.batch(), i, j, value);
      }));
    } else {
      KILN_TRY(tail, epilogue(grid.batch()));
    }
    StmtPtr loop = s_.tma ? consumerLoop(tileCount, index(0), /*releaseLast=*/false)
                          : mainLoop(grid.batch(), firstTile, tileCount);
    body = consumerScope(seq({zeroAccumulators(), loop, tail}));
    if (s_.tma)
      body = tmaRoles(producerLoop(grid.batch(), firstTile, tileCount, index(0)), body);
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

} // namespace

GemmShape gemmShapeOf(const GemmProblem &problem) {
  GemmShape shape{problem.batch, problem.m, problem.n, problem.k, problem.accumulate};
  const kir::Buffer *a = problem.aGathered ? problem.aGathered->buffer.get()
                        : problem.aDense    ? problem.aDense->buffer.get()
                                            : nullptr;
  if (a && problem.bDense && a->dtype == problem.bDense->buffer->dtype) {
    shape.operandDtype = a->dtype;
    shape.denseOperands = true;
    shape.aRun = problem.aGathered ? problem.aGathered->run : problem.aDense->alignment;
    shape.bRun = problem.bDense->alignment;
  }
  shape.allowTf32 = problem.allowTf32;
  shape.aContiguousInK = problem.aContiguousInK;
  shape.bContiguousInK = problem.bContiguousInK;
  if (shape.denseOperands && problem.aDense && problem.bDense) {
    const int64_t panel = kir::kWgmmaRowBytes / dtypeByteSize(shape.operandDtype);
    shape.tmaOperands =
        operandTensorMap("a", *problem.aDense, true, problem.aContiguousInK, problem.batch,
                         problem.m, problem.k, panel, 1) &&
        operandTensorMap("b", *problem.bDense, false, problem.bContiguousInK, problem.batch,
                         problem.n, problem.k, panel, 1);
  }
  return shape;
}

Expected<GemmLowering> lowerGpuMmaGemm(const GemmProblem &problem,
                                       const GpuMatMulSchedule &schedule,
                                       const codegen::GpuTarget &target) {
  GemmShape shape = gemmShapeOf(problem);
  KILN_TRY_VOID(checkGpuMmaSchedule(schedule, shape, target));
  if (schedule.wgmma) {
    // The products' operand dtype and k are those of the matching mma.sync kind.
    WgmmaKind kind = *gpuWgmmaKindFor(shape, target);
    MmaKind like = kind == WgmmaKind::F16_K16    ? MmaKind::F16_M16N8K16
                   : kind == WgmmaKind::BF16_K16 ? MmaKind::BF16_M16N8K16
                                                 : MmaKind::E4M3_M16N8K32;
    return MmaGemmBuilder(problem, schedule, like, kind, target).build();
  }
  return MmaGemmBuilder(problem, schedule, *gpuMmaKindFor(shape, target), std::nullopt, target)
      .build();
}

} // namespace kiln::lower
