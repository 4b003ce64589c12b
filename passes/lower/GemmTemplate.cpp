// The GEMM template: the BLIS loop nest in kernel IR (see GemmTemplate.h and docs/lowering.md,
// "Contraction").
//
//   for jc by nc:                         B panel: kc x nc, nr-wide strips, zero-padded
//     for pc by kc:  pack B panel
//       for ic by mc:  pack A block       A block: mc x kc, mr-row strips, zero-padded
//         for jr by nr, ir by mr:  micro-kernel (mr x nr accumulators in vector registers)
//
// Edges: panels are padded to whole strips, so the micro-kernel always runs a full tile and
// only its write-out is bounded.
#include "passes/lower/GemmTemplate.h"

#include "ir/kernel/Builder.h"
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/LowerUtil.h"

#include <fmt/format.h>

namespace kiln::lower {
namespace {

using namespace kir;
using Parallel = MatMulSchedule::Parallel;

using lower::ceilDiv; // the int64_t one, beside this one for a runtime extent
ExprPtr ceilDiv(ExprPtr a, int64_t b) { return div(add(std::move(a), index(b - 1)), index(b)); }

/// Binds `value` to a new variable for `body`, or passes a constant straight through so
/// index math keeps folding.
Expected<StmtPtr> bindOrError(const std::string &name, ExprPtr value,
                              const std::function<Expected<StmtPtr>(ExprPtr)> &body) {
  if (constIntValue(value))
    return body(value);
  VarPtr var = makeVar(name, value->type());
  KILN_TRY(StmtPtr inner, body(kir::ref(var)));
  return let(var, value, inner);
}

class GemmBuilder {
public:
  GemmBuilder(const GemmProblem &problem, const MatMulSchedule &schedule,
              const codegen::CpuTarget &target)
      : p_(problem), target_(target) {
    GemmShape shape{problem.batch, problem.m, problem.n, problem.k, problem.accumulate};
    s_ = clampGemmSchedule(schedule, shape);
    mr_ = s_.mr;
    nr_ = s_.nr;
    vw_ = s_.vectorWidth;
    nv_ = nr_ / vw_;
    mc_ = s_.mc;
    nc_ = s_.nc;
    kc_ = s_.kc;
    numIc_ = ceilDiv(p_.m, mc_);
    mRows_ = p_.runtimeM ? p_.runtimeM : index(p_.m);
    numIcRows_ = p_.runtimeM ? ceilDiv(p_.runtimeM, mc_) : index(numIc_);
    mEdges_ = p_.runtimeM != nullptr || p_.m % mr_ != 0;
    batches_ = p_.runtimeBatch ? p_.runtimeBatch : index(p_.batch);
    numJc_ = ceilDiv(p_.n, nc_);
    numPc_ = p_.k == 0 ? 0 : ceilDiv(p_.k, kc_);
    accType_ = Type::scalar(p_.accumulate);
    vecType_ = Type{p_.accumulate, static_cast<int>(vw_)};
    isFloat_ = isFloatingPoint(p_.accumulate);
  }

  Expected<GemmLowering> build();

private:
  std::string name(std::string_view suffix) const { return fmt::format("{}_{}", p_.name, suffix); }
  ExprPtr zero() const { return constant(0.0, accType_); }

  ExprPtr blockExtent(const ExprPtr &start, int64_t block, int64_t total) const {
    if (total % block == 0)
      return index(block);
    return min(index(block), sub(index(total), start));
  }
  /// The K extent of the kc block starting at `pc`: with a runtime K, 0 for a block past it,
  /// so the blocks and their partial sums stay as at K's largest.
  ExprPtr kBlockExtent(const ExprPtr &pc) const {
    if (!p_.runtimeK)
      return blockExtent(pc, kc_, p_.k);
    return max(index(0), min(index(kc_), sub(p_.runtimeK, pc)));
  }
  /// The rows of the row block starting at `start`.
  ExprPtr rowBlockExtent(const ExprPtr &start) const {
    if (!p_.runtimeM)
      return blockExtent(start, mc_, p_.m);
    return min(index(mc_), sub(mRows_, start));
  }

  // ---- element reads, guarded at the padded edges
  /// `masked`: rows past M read as zero (the rows of a strip may pass M's end).
  ExprPtr elementA(const ExprPtr &b, const ExprPtr &i, const ExprPtr &k, bool masked) const;
  ExprPtr elementB(const ExprPtr &b, const ExprPtr &k, const ExprPtr &j) const;

  StmtPtr packB(const ExprPtr &b, const ExprPtr &jc, const ExprPtr &ncCur, const ExprPtr &pc,
                const ExprPtr &kcCur, ForKind stripKind, const ExprPtr &base) const;
  ExprPtr prepackedPanel(const ExprPtr &matrix, const ExprPtr &jc, const ExprPtr &pc) const;
  StmtPtr prepackB() const;
  ExprPtr bStripStart(const ExprPtr &b, const ExprPtr &jc, const ExprPtr &jr,
                      const ExprPtr &pc) const;
  StmtPtr packA(const ExprPtr &b, const ExprPtr &ic, const ExprPtr &mcCur, const ExprPtr &pc,
                const ExprPtr &kcCur) const;
  StmtPtr microKernel(const ExprPtr &b, const ExprPtr &i0, const ExprPtr &aStrip,
                      const ExprPtr &bStrip, const ExprPtr &pc, const ExprPtr &kcCur) const;
  StmtPtr microKernelStep(const ExprPtr &kInBlock, const ExprPtr &bStrip,
                          const std::function<ExprPtr(int64_t row)> &aValue) const;
  StmtPtr segmentedMicroKernel(const ExprPtr &b, const ExprPtr &i0, const ExprPtr &bStrip,
                               const ExprPtr &pc, const ExprPtr &kcCur) const;
  int64_t gatheredSegment() const;
  int64_t windowRowSegment() const;
  /// One row of the register tile in a gathered A: its first element's offset and whether it
  /// lies in the input (nullptr: always).
  struct GatheredRow {
    ExprPtr offset, inside;
  };
  std::vector<GatheredRow> gatheredRows(const ExprPtr &b, const ExprPtr &i0,
                                        const ExprPtr &k) const;
  StmtPtr withRowStarts(
      const std::vector<GatheredRow> &rows,
      const std::function<StmtPtr(const std::vector<ExprPtr> &starts)> &body) const;
  StmtPtr gatheredKLoop(const ExprPtr &bStrip, const ExprPtr &segmentStart, int64_t length,
                        const std::vector<ExprPtr> &starts,
                        const std::vector<GatheredRow> *predicates) const;
  static ExprPtr allInside(const std::vector<GatheredRow> &rows);
  Expected<StmtPtr> writeOut(const ExprPtr &b, const ExprPtr &i0, const ExprPtr &j0,
                             const ExprPtr &pcIdx) const;
  StmtPtr vectorWriteOut(const BufferPtr &dest, const GemmOffsetFn &offset, const ExprPtr &b,
                         const ExprPtr &i0, const ExprPtr &j0, const ExprPtr &pcIdx) const;
  Expected<StmtPtr> tileWriteOut(const ExprPtr &b, const ExprPtr &i0, const ExprPtr &j0,
                                 const ExprPtr &pcIdx, bool full, bool final) const;
  Expected<StmtPtr> computeBlock(const ExprPtr &b, const ExprPtr &ic, const ExprPtr &mcCur,
                                 const ExprPtr &jc, const ExprPtr &stripBegin,
                                 const ExprPtr &stripCount, const ExprPtr &pcIdx, const ExprPtr &pc,
                                 const ExprPtr &kcCur) const;
  Expected<StmtPtr> rowBlocks(const ExprPtr &b, const ExprPtr &jc, const ExprPtr &pcIdx,
                              const ExprPtr &pc, const ExprPtr &kcCur, const ExprPtr &icIdxFirst,
                              const ExprPtr &icCount, const ExprPtr &stripBegin,
                              const ExprPtr &stripCount) const;
  Expected<StmtPtr> outerNest(ForKind kind);
  Expected<StmtPtr> innerNest(bool parallel);
  Expected<StmtPtr> emptyK() const;
  StmtPtr withTaskBuffers(StmtPtr body) const;

  const GemmProblem &p_;
  const codegen::CpuTarget &target_;
  MatMulSchedule s_;
  int64_t mr_, nr_, vw_, nv_, mc_, nc_, kc_;
  int64_t numIc_, numJc_, numPc_; ///< block counts, numIc_ at M's largest
  /// M and its row blocks as the kernel computes them (runtime expressions for a runtime M).
  ExprPtr mRows_, numIcRows_;
  /// The batch as the kernel computes it.
  ExprPtr batches_;
  /// Whether a register tile may pass M's end (rows are then clamped and masked).
  bool mEdges_ = false;
  Type accType_, vecType_;
  bool isFloat_ = true;

  /// Where the micro-kernel reads B: a panel packed per (jc, pc) step, or with prepackB the
  /// whole packed B (a workspace the prelude fills).
  BufferPtr bPanel_, aBlock_, tile_, acc_;
  /// Where partial sums over K blocks live between blocks (nullptr with a single block).
  BufferPtr partial_;
  GemmOffsetFn partialOffset_;
  std::vector<BufferPtr> workspaces_;
};

ExprPtr GemmBuilder::elementA(const ExprPtr &b, const ExprPtr &i, const ExprPtr &k,
                              bool masked) const {
  if (!masked) {
    std::vector<ExprPtr> idx{b, i, k};
    return cast(p_.a(idx), accType_);
  }
  std::vector<ExprPtr> idx{b, min(i, sub(mRows_, index(1))), k};
  return select(lt(i, mRows_), cast(p_.a(idx), accType_), zero());
}

ExprPtr GemmBuilder::elementB(const ExprPtr &b, const ExprPtr &k, const ExprPtr &j) const {
  if (p_.n % nr_ == 0) {
    std::vector<ExprPtr> idx{b, k, j};
    return cast(p_.b(idx), accType_);
  }
  std::vector<ExprPtr> idx{b, k, min(j, index(p_.n - 1))};
  return select(lt(j, index(p_.n)), cast(p_.b(idx), accType_), zero());
}

// Bp[base + s*kc*nr + k*nr + c] = B(b, pc + k, jc + s*nr + c): each nr-wide strip is
// contiguous per k, which is the order the micro-kernel reads it in.
StmtPtr GemmBuilder::packB(const ExprPtr &b, const ExprPtr &jc, const ExprPtr &ncCur,
                           const ExprPtr &pc, const ExprPtr &kcCur, ForKind stripKind,
                           const ExprPtr &base) const {
  VarPtr s = makeVar(name("pb_s")), k = makeVar(name("pb_k")), c = makeVar(name("pb_c"));
  ExprPtr j = add(add(jc, mul(kir::ref(s), index(nr_))), kir::ref(c));
  ExprPtr dest =
      add(base,
          add(add(mul(kir::ref(s), index(kc_ * nr_)), mul(kir::ref(k), index(nr_))), kir::ref(c)));
  StmtPtr body = store(bPanel_, dest, elementB(b, add(pc, kir::ref(k)), j));
  StmtPtr inner = p_.bContiguousInK
                      ? forRange(c, nr_, ForKind::Serial,
                                 forLoop(k, index(0), kcCur, ForKind::Vectorized, body))
                      : forLoop(k, index(0), kcCur, ForKind::Serial,
                                forRange(c, nr_, ForKind::Vectorized, body));
  return forLoop(s, index(0), ceilDiv(ncCur, nr_), stripKind, inner);
}

// Where the panel of step (jc, pc) of B matrix `matrix` starts in the prepacked B: the panels
// packB would pack, one after another, each kc x nc (the last ones padded), so the micro-kernel
// reads a prepacked panel exactly as a freshly packed one.
ExprPtr GemmBuilder::prepackedPanel(const ExprPtr &matrix, const ExprPtr &jc,
                                    const ExprPtr &pc) const {
  ExprPtr panel = add(mul(add(mul(matrix, index(numJc_)), div(jc, index(nc_))), index(numPc_)),
                      div(pc, index(kc_)));
  return mul(panel, index(kc_ * nc_));
}

// The prelude of prepackB: every (matrix, jc, pc) panel of B, packed by packB, the column
// panels in parallel.
StmtPtr GemmBuilder::prepackB() const {
  const WeightOperand &weight = *p_.bWeight;
  VarPtr m = makeVar(name("pp_m")), jcIdx = makeVar(name("pp_jc")), pcIdx = makeVar(name("pp_pc"));
  ExprPtr jc = mul(kir::ref(jcIdx), index(nc_)), pc = mul(kir::ref(pcIdx), index(kc_));
  StmtPtr pack =
      packB(weight.representative(kir::ref(m)), jc, blockExtent(jc, nc_, p_.n), pc,
            blockExtent(pc, kc_, p_.k), ForKind::Serial, prepackedPanel(kir::ref(m), jc, pc));
  return forRange(
      m, weight.matrices, ForKind::Serial,
      forRange(jcIdx, numJc_, ForKind::Parallel, forRange(pcIdx, numPc_, ForKind::Serial, pack)));
}

// Where strip jr of the (b, jc, pc) step starts in bPanel_: in the panel packed for this step,
// or in the prepacked B.
ExprPtr GemmBuilder::bStripStart(const ExprPtr &b, const ExprPtr &jc, const ExprPtr &jr,
                                 const ExprPtr &pc) const {
  ExprPtr strip = mul(jr, index(kc_ * nr_));
  return p_.prepackB ? add(prepackedPanel(p_.bWeight->matrixOf(b), jc, pc), strip) : strip;
}

// Ap[s][k][r] = A(b, ic + s*mr + r, pc + k).
StmtPtr GemmBuilder::packA(const ExprPtr &b, const ExprPtr &ic, const ExprPtr &mcCur,
                           const ExprPtr &pc, const ExprPtr &kcCur) const {
  // The rows of strip `strip` at every k of the block.
  auto packStrip = [&](const ExprPtr &strip, bool masked) {
    VarPtr k = makeVar(name("pa_k")), r = makeVar(name("pa_r"));
    ExprPtr i = add(add(ic, mul(strip, index(mr_))), kir::ref(r));
    ExprPtr dest =
        add(add(mul(strip, index(kc_ * mr_)), mul(kir::ref(k), index(mr_))), kir::ref(r));
    StmtPtr body = store(aBlock_, dest, elementA(b, i, add(pc, kir::ref(k)), masked));
    return p_.aContiguousInK ? forRange(r, mr_, ForKind::Serial,
                                        forLoop(k, index(0), kcCur, ForKind::Vectorized, body))
                             : forLoop(k, index(0), kcCur, ForKind::Serial,
                                       forRange(r, mr_, ForKind::Vectorized, body));
  };
  VarPtr s = makeVar(name("pa_s"));
  if (!p_.runtimeM)
    return forLoop(s, index(0), ceilDiv(mcCur, mr_), ForKind::Serial,
                   packStrip(kir::ref(s), mEdges_));
  // A runtime M: the whole strips read A unmasked, only a last partial one is masked.
  ExprPtr whole = div(mcCur, index(mr_));
  return seq({forLoop(s, index(0), whole, ForKind::Serial, packStrip(kir::ref(s), false)),
              ifThen(lt(mul(whole, index(mr_)), mcCur), packStrip(whole, true))});
}

// The register tile: mr * nr/vw vector accumulators at constant indices of a Register buffer,
// fully unrolled here so the backend keeps each in a register. Per k: nr/vw vector loads of
// packed B, mr broadcasts of A, mr * nr/vw fused multiply-adds.
StmtPtr GemmBuilder::microKernel(const ExprPtr &b, const ExprPtr &i0, const ExprPtr &aStrip,
                                 const ExprPtr &bStrip, const ExprPtr &pc,
                                 const ExprPtr &kcCur) const {
  std::vector<StmtPtr> init;
  for (int64_t r = 0; r < mr_; ++r)
    for (int64_t v = 0; v < nv_; ++v)
      init.push_back(store(acc_, index(r * nr_ + v * vw_), constant(0.0, vecType_)));
  if (gatheredSegment() > 0)
    return seq({seq(std::move(init)), segmentedMicroKernel(b, i0, bStrip, pc, kcCur)});

  VarPtr k = makeVar(name("k"));
  StmtPtr step = microKernelStep(kir::ref(k), bStrip, [&](int64_t r) {
    return s_.packA ? load(aBlock_, add(aStrip, add(mul(kir::ref(k), index(mr_)), index(r))))
                    : elementA(b, add(i0, index(r)), add(pc, kir::ref(k)), mEdges_);
  });
  return seq({seq(std::move(init)), forLoop(k, index(0), kcCur, ForKind::Serial, step)});
}

// One k step of the register tile: `aValue(r)` is row r's element of A (in accType_) at this k,
// `kInBlock` the step's index within the kc block (its row of the packed B strip).
StmtPtr GemmBuilder::microKernelStep(const ExprPtr &kInBlock, const ExprPtr &bStrip,
                                     const std::function<ExprPtr(int64_t row)> &aValue) const {
  std::vector<VarPtr> bVecs;
  for (int64_t v = 0; v < nv_; ++v)
    bVecs.push_back(makeVar(fmt::format("{}_b{}", p_.name, v), vecType_));

  std::vector<StmtPtr> rows;
  for (int64_t r = 0; r < mr_; ++r) {
    VarPtr aVar = makeVar(fmt::format("{}_a{}", p_.name, r), vecType_);
    std::vector<StmtPtr> fmas;
    for (int64_t v = 0; v < nv_; ++v) {
      ExprPtr at = index(r * nr_ + v * vw_);
      ExprPtr old = load(acc_, at, static_cast<int>(vw_));
      ExprPtr updated = isFloat_ ? call(Intrinsic::Fma, {kir::ref(aVar), kir::ref(bVecs[v]), old})
                                 : add(old, mul(kir::ref(aVar), kir::ref(bVecs[v])));
      fmas.push_back(store(acc_, at, updated));
    }
    rows.push_back(let(aVar, broadcast(aValue(r), static_cast<int>(vw_)), seq(std::move(fmas))));
  }
  StmtPtr step = seq(std::move(rows));
  for (int64_t v = nv_ - 1; v >= 0; --v) {
    ExprPtr at = add(bStrip, add(mul(kInBlock, index(nr_)), index(v * vw_)));
    step = let(bVecs[v], load(bPanel_, at, static_cast<int>(vw_)), step);
  }
  return step;
}

// The length of the K segments an unpacked gathered A is read in (0: not read so). Within a
// segment every row's elements are consecutive (`stride` apart) and equally inside or outside
// the input, so the address and the padding test leave the k loop. A segment is a whole run
// when kc holds whole runs, else the kc block itself when it divides the run; otherwise the
// k loop stays whole.
int64_t GemmBuilder::gatheredSegment() const {
  if (s_.packA || !p_.aGathered || p_.aGathered->run <= 1 || p_.k % p_.aGathered->run != 0 ||
      p_.runtimeK)
    return 0;
  int64_t run = p_.aGathered->run;
  if (kc_ % run == 0)
    return run;
  if (run % kc_ == 0)
    return kc_;
  return 0;
}

// The row of taps (GatheredOperand::windowRow) the micro-kernel reads as one segment where the
// whole tile is inside, when kc holds whole rows of taps and a row is longer than a run
// (0: segments are runs).
int64_t GemmBuilder::windowRowSegment() const {
  int64_t row = p_.aGathered ? p_.aGathered->windowRow : 0;
  int64_t segment = gatheredSegment();
  if (segment == 0 || row <= segment || row % segment != 0 || kc_ % row != 0 || p_.k % row != 0)
    return 0;
  return row;
}

// Each row of the register tile at K offset `k` of a gathered A: where it starts and whether it
// lies in the input (nullptr: always). Rows past M read the last row: real memory, so their
// loads need no predicate, and the write-out never stores those rows of the tile. (Testing
// them as well would give every tile on M's edge, and every tile of a runtime M, the
// predicated path: slower code, and much more of it for LLVM to compile.)
std::vector<GemmBuilder::GatheredRow> GemmBuilder::gatheredRows(const ExprPtr &b,
                                                                const ExprPtr &i0,
                                                                const ExprPtr &k) const {
  std::vector<GatheredRow> rows;
  for (int64_t r = 0; r < mr_; ++r) {
    ExprPtr i = add(i0, index(r));
    if (mEdges_)
      i = min(i, sub(mRows_, index(1)));
    auto [offset, inside] = p_.aGathered->address(b, i, k);
    rows.push_back({offset, inside});
  }
  return rows;
}

// Binds each row's start (`rows`) to a variable, around `body` of those variables.
StmtPtr GemmBuilder::withRowStarts(
    const std::vector<GatheredRow> &rows,
    const std::function<StmtPtr(const std::vector<ExprPtr> &starts)> &body) const {
  std::vector<VarPtr> vars;
  std::vector<ExprPtr> starts;
  for (int64_t r = 0; r < mr_; ++r) {
    vars.push_back(makeVar(fmt::format("{}_row{}", p_.name, r), rows[size_t(r)].offset->type()));
    starts.push_back(kir::ref(vars.back()));
  }
  StmtPtr bound = body(starts);
  for (int64_t r = mr_ - 1; r >= 0; --r)
    bound = let(vars[size_t(r)], rows[size_t(r)].offset, bound);
  return bound;
}

// `length` k steps of the register tile reading each row of a gathered A from `starts`, with
// loads predicated on each row's `inside` where given; `segmentStart` is the first step's
// index within the kc block.
StmtPtr GemmBuilder::gatheredKLoop(const ExprPtr &bStrip, const ExprPtr &segmentStart,
                                   int64_t length, const std::vector<ExprPtr> &starts,
                                   const std::vector<GatheredRow> *predicates) const {
  const GatheredOperand &gathered = *p_.aGathered;
  VarPtr k = makeVar(name("k"));
  ExprPtr kInBlock = add(segmentStart, kir::ref(k));
  StmtPtr step = microKernelStep(kInBlock, bStrip, [&](int64_t r) {
    ExprPtr at = add(starts[size_t(r)], mul(kir::ref(k), index(gathered.stride)));
    ExprPtr predicate = predicates ? (*predicates)[size_t(r)].inside : nullptr;
    return cast(load(gathered.buffer, at, 1, predicate), accType_);
  });
  return forLoop(k, index(0), index(length), ForKind::Serial, step);
}

// Whether every row of the tile is inside (nullptr: always).
ExprPtr GemmBuilder::allInside(const std::vector<GatheredRow> &rows) {
  ExprPtr all;
  for (const GatheredRow &row : rows)
    if (row.inside)
      all = all ? logicalAnd(all, row.inside) : row.inside;
  return all;
}

// The micro-kernel over a gathered A in segments (gatheredSegment): per segment, each row's
// first address and padding test once; then a k loop of plain loads when every row of the
// tile is inside the input for this segment (a convolution's interior), or of predicated loads
// otherwise (the tile touches the padding for this tap).
//
// With rows of taps (windowRowSegment) the kc block is a box of whole rows of taps, so the
// tile is inside for the whole block when its first and last elements are: such a tile (all
// but the image's border) reads each row of taps as one segment with no test at all, keeping
// the k loops free of branches that would make the register allocator shuffle or spill the
// accumulators. A tile on the border tests each row of taps, and reads the rows that cross
// the border tap by tap with predicated loads.
StmtPtr GemmBuilder::segmentedMicroKernel(const ExprPtr &b, const ExprPtr &i0,
                                          const ExprPtr &bStrip, const ExprPtr &pc,
                                          const ExprPtr &kcCur) const {
  int64_t run = gatheredSegment(), row = windowRowSegment();
  auto segments = [&](int64_t segment, const std::function<StmtPtr(const ExprPtr &)> &body) {
    VarPtr ks = makeVar(name("ks"));
    return forLoop(ks, index(0), div(kcCur, index(segment)), ForKind::Serial,
                   body(mul(kir::ref(ks), index(segment))));
  };
  // One run: plain loads where every row is inside, else predicated ones.
  auto runSegment = [&](const ExprPtr &start) {
    std::vector<GatheredRow> rows = gatheredRows(b, i0, add(pc, start));
    ExprPtr inside = allInside(rows);
    return withRowStarts(rows, [&](const std::vector<ExprPtr> &starts) {
      StmtPtr plain = gatheredKLoop(bStrip, start, run, starts, nullptr);
      if (!inside)
        return plain;
      return ifThen(inside, plain, gatheredKLoop(bStrip, start, run, starts, &rows));
    });
  };
  if (row == 0)
    return segments(run, runSegment);

  auto insideBetween = [&](const ExprPtr &firstK, const ExprPtr &lastK) {
    ExprPtr first = allInside(gatheredRows(b, i0, firstK));
    ExprPtr last = allInside(gatheredRows(b, i0, lastK));
    return first && last ? logicalAnd(first, last) : (first ? first : last);
  };
  // A row of taps: plain loads where the tile is inside (`tested`: where its first and last
  // taps are, else run by run).
  auto rowSegment = [&](const ExprPtr &start, bool tested) {
    ExprPtr inside =
        tested ? insideBetween(add(pc, start), add(pc, add(start, index(row - 1)))) : nullptr;
    return withRowStarts(
        gatheredRows(b, i0, add(pc, start)), [&](const std::vector<ExprPtr> &starts) {
          StmtPtr plain = gatheredKLoop(bStrip, start, row, starts, nullptr);
          if (!inside)
            return plain;
          VarPtr piece = makeVar(name("kp"));
          StmtPtr byRuns = forRange(piece, row / run, ForKind::Serial,
                                    runSegment(add(start, mul(kir::ref(piece), index(run)))));
          return ifThen(inside, plain, byRuns);
        });
  };
  auto plainRow = [&](const ExprPtr &start) { return rowSegment(start, false); };
  auto testedRow = [&](const ExprPtr &start) { return rowSegment(start, true); };
  ExprPtr tileInside = insideBetween(pc, add(pc, sub(kcCur, index(1))));
  StmtPtr interior = segments(row, plainRow);
  return tileInside ? ifThen(tileInside, interior, segments(row, testedRow)) : interior;
}

// Full tile, plain output (or a non-final block into the partial-sum buffer): vector stores
// straight from the accumulators, adding the previous blocks' partial sums back in.
StmtPtr GemmBuilder::vectorWriteOut(const BufferPtr &dest, const GemmOffsetFn &offset,
                                    const ExprPtr &b, const ExprPtr &i0, const ExprPtr &j0,
                                    const ExprPtr &pcIdx) const {
  std::vector<StmtPtr> stores;
  for (int64_t r = 0; r < mr_; ++r)
    for (int64_t v = 0; v < nv_; ++v) {
      ExprPtr at = offset(b, add(i0, index(r)), add(j0, index(v * vw_)));
      ExprPtr value = load(acc_, index(r * nr_ + v * vw_), static_cast<int>(vw_));
      if (numPc_ > 1)
        value = add(value, load(partial_, at, static_cast<int>(vw_), gt(pcIdx, index(0))));
      stores.push_back(store(dest, at, value));
    }
  return seq(std::move(stores));
}

// The general write-out: the accumulators go to a small tile buffer, then a loop over the
// valid part of the tile adds the partial sums and either stores the next partial sum or
// (final) runs the epilogue. The innermost loop is vectorized along the output's contiguous axis.
Expected<StmtPtr> GemmBuilder::tileWriteOut(const ExprPtr &b, const ExprPtr &i0, const ExprPtr &j0,
                                            const ExprPtr &pcIdx, bool full, bool final) const {
  std::vector<StmtPtr> stmts;
  for (int64_t r = 0; r < mr_; ++r)
    for (int64_t v = 0; v < nv_; ++v) {
      ExprPtr at = index(r * nr_ + v * vw_);
      stmts.push_back(store(tile_, at, load(acc_, at, static_cast<int>(vw_))));
    }
  VarPtr r = makeVar(name("wr")), c = makeVar(name("wc"));
  ExprPtr i = add(i0, kir::ref(r)), j = add(j0, kir::ref(c));
  ExprPtr value = load(tile_, add(mul(kir::ref(r), index(nr_)), kir::ref(c)));
  ExprPtr partialAt = partial_ ? partialOffset_(b, i, j) : nullptr;
  if (partial_)
    value = add(value, load(partial_, partialAt, 1, gt(pcIdx, index(0))));
  StmtPtr element;
  if (final) {
    std::vector<ExprPtr> bij{b, i, j};
    KILN_TRY(element, p_.storeResult(bij, value));
  } else {
    element = store(partial_, partialAt, value);
  }
  ExprPtr rows = full ? index(mr_) : min(index(mr_), sub(mRows_, i0));
  ExprPtr cols = full ? index(nr_) : min(index(nr_), sub(index(p_.n), j0));
  if (p_.outputContiguousInI)
    stmts.push_back(forLoop(c, index(0), cols, ForKind::Serial,
                            forLoop(r, index(0), rows, ForKind::Vectorized, element)));
  else
    stmts.push_back(forLoop(r, index(0), rows, ForKind::Serial,
                            forLoop(c, index(0), cols, ForKind::Vectorized, element)));
  return seq(std::move(stmts));
}

Expected<StmtPtr> GemmBuilder::writeOut(const ExprPtr &b, const ExprPtr &i0, const ExprPtr &j0,
                                        const ExprPtr &pcIdx) const {
  bool edgesPossible = mEdges_ || p_.n % nr_ != 0;
  ExprPtr isFull =
      logicalAnd(le(add(i0, index(mr_)), mRows_), le(add(j0, index(nr_)), index(p_.n)));
  // Final block of K: the epilogue, through the tile buffer (or plain vector stores).
  auto finalWriteOut = [&]() -> Expected<StmtPtr> {
    if (p_.plainOutput) {
      StmtPtr fast = vectorWriteOut(p_.plainOutput, p_.plainOffset, b, i0, j0, pcIdx);
      if (!edgesPossible)
        return fast;
      KILN_TRY(StmtPtr edge, tileWriteOut(b, i0, j0, pcIdx, false, true));
      return ifThen(isFull, fast, edge);
    }
    KILN_TRY(StmtPtr fullTile, tileWriteOut(b, i0, j0, pcIdx, true, true));
    if (!edgesPossible)
      return fullTile;
    KILN_TRY(StmtPtr edge, tileWriteOut(b, i0, j0, pcIdx, false, true));
    return ifThen(isFull, fullTile, edge);
  };
  if (numPc_ <= 1 || p_.plainOutput)
    return finalWriteOut();
  // A non-final block with a separate partial-sum workspace.
  KILN_TRY(StmtPtr last, finalWriteOut());
  StmtPtr fast = vectorWriteOut(partial_, partialOffset_, b, i0, j0, pcIdx);
  StmtPtr notLast = fast;
  if (edgesPossible) {
    KILN_TRY(StmtPtr edge, tileWriteOut(b, i0, j0, pcIdx, false, false));
    notLast = ifThen(isFull, fast, edge);
  }
  return ifThen(eq(pcIdx, index(numPc_ - 1)), last, notLast);
}

// All micro-tiles of one packed A block against strips [stripBegin, stripBegin + stripCount)
// of the packed B panel.
Expected<StmtPtr> GemmBuilder::computeBlock(const ExprPtr &b, const ExprPtr &ic,
                                            const ExprPtr &mcCur, const ExprPtr &jc,
                                            const ExprPtr &stripBegin, const ExprPtr &stripCount,
                                            const ExprPtr &pcIdx, const ExprPtr &pc,
                                            const ExprPtr &kcCur) const {
  VarPtr jr = makeVar(name("jr")), ir = makeVar(name("ir"));
  ExprPtr i0 = add(ic, mul(kir::ref(ir), index(mr_)));
  ExprPtr j0 = add(jc, mul(kir::ref(jr), index(nr_)));
  ExprPtr aStrip = mul(kir::ref(ir), index(kc_ * mr_));
  ExprPtr bStrip = bStripStart(b, jc, kir::ref(jr), pc);
  KILN_TRY(StmtPtr tail, writeOut(b, i0, j0, pcIdx));
  StmtPtr tileBody = seq({microKernel(b, i0, aStrip, bStrip, pc, kcCur), tail});
  return forLoop(jr, stripBegin, stripCount, ForKind::Serial,
                 forLoop(ir, index(0), ceilDiv(mcCur, mr_), ForKind::Serial, tileBody));
}

// Row blocks [icIdxFirst, icIdxFirst + icCount) of one (b, jc, pc) step: pack A, compute.
Expected<StmtPtr> GemmBuilder::rowBlocks(const ExprPtr &b, const ExprPtr &jc, const ExprPtr &pcIdx,
                                         const ExprPtr &pc, const ExprPtr &kcCur,
                                         const ExprPtr &icIdxFirst, const ExprPtr &icCount,
                                         const ExprPtr &stripBegin,
                                         const ExprPtr &stripCount) const {
  VarPtr icIdx = makeVar(name("ic_block"));
  bool single = constIntValue(icCount) == 1;
  ExprPtr icIndex = single ? icIdxFirst : kir::ref(icIdx);
  KILN_TRY(StmtPtr body, bindOrError(name("ic"), mul(icIndex, index(mc_)), [&](ExprPtr ic) {
             return bindOrError(name("mc_cur"), rowBlockExtent(ic),
                                [&](ExprPtr mcCur) -> Expected<StmtPtr> {
                                  KILN_TRY(StmtPtr compute,
                                           computeBlock(b, ic, mcCur, jc, stripBegin, stripCount,
                                                        pcIdx, pc, kcCur));
                                  if (!s_.packA)
                                    return compute;
                                  return seq({packA(b, ic, mcCur, pc, kcCur), compute});
                                });
           }));
  if (single)
    return body;
  return forLoop(icIdx, icIdxFirst, icCount, ForKind::Serial, body);
}

StmtPtr GemmBuilder::withTaskBuffers(StmtPtr body) const {
  body = allocate(acc_, allocate(tile_, std::move(body)));
  if (s_.packA)
    body = allocate(aBlock_, body);
  return body;
}

// Parallel::Outer (and Serial): tasks over (batch, column panel), each packing privately.
Expected<StmtPtr> GemmBuilder::outerNest(ForKind kind) {
  if (!p_.prepackB)
    bPanel_ = makeBuffer(name("b_panel"), p_.accumulate, kc_ * nc_, MemScope::Local);
  VarPtr task = makeVar(name("task"));
  ExprPtr t = kir::ref(task);
  ExprPtr bIndex = p_.batch == 1 ? index(0) : numJc_ == 1 ? t : div(t, index(numJc_));
  ExprPtr jcIndex = numJc_ == 1 ? index(0) : p_.batch == 1 ? t : mod(t, index(numJc_));
  KILN_TRY(
      StmtPtr body, bindOrError(name("b"), bIndex, [&](ExprPtr b) {
        return bindOrError(name("jc"), mul(jcIndex, index(nc_)), [&](ExprPtr jc) {
          return bindOrError(
              name("nc_cur"), blockExtent(jc, nc_, p_.n), [&](ExprPtr ncCur) -> Expected<StmtPtr> {
                VarPtr pcIdx = makeVar(name("pc_block"));
                ExprPtr pcIndex = numPc_ == 1 ? index(0) : kir::ref(pcIdx);
                KILN_TRY(
                    StmtPtr step,
                    bindOrError(name("pc"), mul(pcIndex, index(kc_)), [&](ExprPtr pc) {
                      return bindOrError(
                          name("kc_cur"), kBlockExtent(pc),
                          [&](ExprPtr kcCur) -> Expected<StmtPtr> {
                            KILN_TRY(StmtPtr blocks,
                                     rowBlocks(b, jc, pcIndex, pc, kcCur, index(0), numIcRows_,
                                               index(0), ceilDiv(ncCur, nr_)));
                            if (p_.prepackB)
                              return blocks;
                            return seq({packB(b, jc, ncCur, pc, kcCur, ForKind::Serial, index(0)),
                                        blocks});
                          });
                    }));
                if (numPc_ == 1)
                  return step;
                return forLoop(pcIdx, index(0), index(numPc_), ForKind::Serial, step);
              });
        });
      }));
  body = withTaskBuffers(body);
  if (!p_.prepackB)
    body = allocate(bPanel_, body);
  return forLoop(task, index(0), mul(batches_, index(numJc_)), kind, body);
}

// Parallel::Inner: serial over (batch, column panel, K block); per step the B panel is packed
// in parallel into a shared workspace, then (row block x column chunk) tasks run in parallel.
Expected<StmtPtr> GemmBuilder::innerNest(bool parallel) {
  if (!p_.prepackB) {
    bPanel_ = makeBuffer(name("b_panel"), p_.accumulate, kc_ * nc_, MemScope::Global);
    workspaces_.insert(workspaces_.begin(), bPanel_);
  }
  int64_t stripsPerPanel = nc_ / nr_;
  int64_t chunks = parallel ? innerColumnChunks(numIc_, stripsPerPanel, target_.cores) : 1;
  int64_t stripsPerChunk = ceilDiv(stripsPerPanel, chunks);
  chunks = ceilDiv(stripsPerPanel, stripsPerChunk);
  ForKind kind = parallel ? ForKind::Parallel : ForKind::Serial;

  VarPtr bVar = makeVar(name("b")), jcIdx = makeVar(name("jc_block")),
         pcIdx = makeVar(name("pc_block")), task = makeVar(name("task"));
  ExprPtr bIndex = p_.batch == 1 ? index(0) : kir::ref(bVar);
  ExprPtr jcIndex = numJc_ == 1 ? index(0) : kir::ref(jcIdx);
  ExprPtr pcIndex = numPc_ == 1 ? index(0) : kir::ref(pcIdx);

  KILN_TRY(StmtPtr perStep, bindOrError(name("jc"), mul(jcIndex, index(nc_)), [&](ExprPtr jc) {
             return bindOrError(
                 name("nc_cur"), blockExtent(jc, nc_, p_.n),
                 [&](ExprPtr ncCur) -> Expected<StmtPtr> {
                   return bindOrError(name("pc"), mul(pcIndex, index(kc_)), [&](ExprPtr pc) {
                     return bindOrError(
                         name("kc_cur"), kBlockExtent(pc), [&](ExprPtr kcCur) -> Expected<StmtPtr> {
                           ExprPtr t = kir::ref(task);
                           ExprPtr icIndex = numIc_ == 1   ? index(0)
                                             : chunks == 1 ? t
                                                           : div(t, index(chunks));
                           ExprPtr chunk = chunks == 1   ? index(0)
                                           : numIc_ == 1 ? t
                                                         : mod(t, index(chunks));
                           ExprPtr stripBegin = mul(chunk, index(stripsPerChunk));
                           ExprPtr stripCount =
                               chunks == 1
                                   ? ceilDiv(ncCur, nr_)
                                   : max(index(0), sub(min(add(stripBegin, index(stripsPerChunk)),
                                                           ceilDiv(ncCur, nr_)),
                                                       stripBegin));
                           KILN_TRY(StmtPtr blocks,
                                    rowBlocks(bIndex, jc, pcIndex, pc, kcCur, icIndex, index(1),
                                              stripBegin, stripCount));
                           StmtPtr tasks = forLoop(task, index(0), mul(numIcRows_, index(chunks)),
                                                   kind, withTaskBuffers(blocks));
                           if (p_.prepackB)
                             return tasks;
                           return seq({packB(bIndex, jc, ncCur, pc, kcCur, kind, index(0)), tasks});
                         });
                   });
                 });
           }));
  StmtPtr body = perStep;
  if (numPc_ > 1)
    body = forLoop(pcIdx, index(0), index(numPc_), ForKind::Serial, body);
  if (numJc_ > 1)
    body = forLoop(jcIdx, index(0), index(numJc_), ForKind::Serial, body);
  if (p_.batch > 1)
    body = forLoop(bVar, index(0), batches_, ForKind::Serial, body);
  return body;
}

// K = 0: every output is the epilogue of an empty sum.
Expected<StmtPtr> GemmBuilder::emptyK() const {
  VarPtr b = makeVar(name("b")), i = makeVar(name("i")), j = makeVar(name("j"));
  std::vector<ExprPtr> bij{kir::ref(b), kir::ref(i), kir::ref(j)};
  KILN_TRY(StmtPtr element, p_.storeResult(bij, zero()));
  return forLoop(b, index(0), batches_, ForKind::Serial,
                 forLoop(i, index(0), mRows_, ForKind::Serial,
                         forRange(j, p_.n, ForKind::Vectorized, element)));
}

Expected<GemmLowering> GemmBuilder::build() {
  KILN_CHECK(p_.a && p_.b && p_.storeResult, "GEMM problem without element functions");
  KILN_CHECK(!p_.plainOutput || (p_.plainOffset && p_.plainOutput->dtype == p_.accumulate &&
                                 !p_.outputContiguousInI),
             "a plain GEMM output must hold the accumulator, contiguous in j");
  if (p_.batch == 0 || p_.m == 0 || p_.n == 0)
    return GemmLowering{seq({}), {}, {}};
  if (p_.k == 0) {
    KILN_TRY(StmtPtr body, emptyK());
    return GemmLowering{body, {}, {}};
  }

  KILN_CHECK(!p_.prepackB || p_.bWeight, "prepackB needs a weight operand B");
  if (p_.prepackB) {
    bPanel_ = makeBuffer(name("b_packed"), p_.accumulate,
                         p_.bWeight->matrices * numJc_ * numPc_ * kc_ * nc_);
    workspaces_.push_back(bPanel_);
  }
  aBlock_ = makeBuffer(name("a_block"), p_.accumulate, kc_ * mc_, MemScope::Local);
  tile_ = makeBuffer(name("tile"), p_.accumulate, mr_ * nr_, MemScope::Local);
  acc_ = makeBuffer(name("acc"), p_.accumulate, mr_ * nr_, MemScope::Register);
  if (numPc_ > 1) {
    if (p_.plainOutput) {
      partial_ = p_.plainOutput;
      partialOffset_ = p_.plainOffset;
    } else {
      partial_ = makeBuffer(name("partial"), p_.accumulate, p_.batch * p_.m * p_.n);
      int64_t m = p_.m, n = p_.n;
      partialOffset_ = [m, n](ExprPtr b, ExprPtr i, ExprPtr j) {
        return add(mul(add(mul(b, index(m)), i), index(n)), j);
      };
      workspaces_.push_back(partial_);
    }
  }

  StmtPtr body;
  switch (s_.parallel) {
  case Parallel::Outer: {
    KILN_TRY(body, outerNest(ForKind::Parallel));
    break;
  }
  case Parallel::Inner: {
    KILN_TRY(body, innerNest(true));
    break;
  }
  case Parallel::Serial: {
    KILN_TRY(body, innerNest(false));
    break;
  }
  }
  return GemmLowering{body, workspaces_, {}, p_.prepackB ? prepackB() : nullptr};
}

} // namespace

ElementFn GatheredOperand::element() const {
  return [buffer = buffer, address = address](std::span<const ExprPtr> idx) {
    auto [offset, inside] = address(idx[0], idx[1], idx[2]);
    return inside ? load(buffer, offset, 1, inside) : load(buffer, offset);
  };
}

ElementFn DenseOperand::element() const {
  return [buffer = buffer, offset = offset](std::span<const ExprPtr> idx) {
    return load(buffer, offset(idx[0], idx[1], idx[2]));
  };
}

Expected<GemmLowering> lowerGemm(const GemmProblem &problem, const MatMulSchedule &schedule,
                                 const codegen::CpuTarget &target) {
  // Checked before the builder derives block counts from it.
  GemmShape shape{problem.batch, problem.m, problem.n, problem.k, problem.accumulate};
  KILN_TRY_VOID(checkGemmSchedule(schedule, shape));
  GemmBuilder builder(problem, schedule, target);
  return builder.build();
}

} // namespace kiln::lower
