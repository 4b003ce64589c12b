// The simulator's tensor-core statements: warp matrix products of every kind
// against an fp64 product, ldmatrix against the PTX layouts, asynchronous
// copies that land only when waited for, and the misuses each must report.
#include "SimTestUtil.h"

#include "ir/kernel/MmaLayout.h"
#include "support/FloatConvert.h"

#include <cmath>

using namespace kiln;
using namespace kiln::kir;
using kiln::test::GpuCoords;
using kiln::test::gpuKernel;

namespace {

ExprPtr f32(double v) { return floatImm(v, Type::scalar(DType::F32)); }

/// A tensor of the flat positions (row * cols + col) of every lane's fragment
/// values of `operand`, lane-major, as the kernels below index their operands.
HostTensor fragmentIndices(MmaKind kind, MmaOperand operand) {
  const MmaShapeInfo &info = mmaShapeInfo(kind);
  int count = operand == MmaOperand::A ? info.aElements
              : operand == MmaOperand::B ? info.bElements
                                         : info.cElements;
  int cols = operand == MmaOperand::A ? info.k : info.n;
  HostTensor t(DType::I64, {32 * count});
  for (int lane = 0; lane < 32; ++lane)
    for (int e = 0; e < count; ++e) {
      MatrixPosition p = mmaFragmentPosition(kind, operand, lane, e);
      t.as<int64_t>()[static_cast<size_t>(lane * count + e)] = p.row * cols + p.col;
    }
  return t;
}

/// register[e] = buffer[base + indices[lane * count + e]] for e < count.
StmtPtr loadFragment(const BufferPtr &reg, const BufferPtr &buffer, ExprPtr base,
                     const BufferPtr &indices, ExprPtr lane, int count, const char *name) {
  auto e = makeVar(name);
  ExprPtr position = load(indices, add(mul(lane, index(count)), kir::ref(e)));
  return forRange(e, count, ForKind::Serial,
                  store(reg, kir::ref(e), load(buffer, add(base, position))));
}

struct MmaRun {
  MmaKind kind;
  int warps;
  int iterations; ///< mma statements accumulating into the same c fragment
  bool inPlace;   ///< d aliases c; else d is a fragment of its own
};

/// Each warp w: D_w = A_w x B_w (x iterations) + C_w, operands loaded from
/// global by plain loads at the positions mmaFragmentPosition gives.
Kernel mmaKernel(const MmaRun &run) {
  const MmaShapeInfo &info = mmaShapeInfo(run.kind);
  const int64_t mk = info.m * info.k, kn = info.k * info.n, mn = info.m * info.n;
  auto a = makeBuffer("a", info.operandDtype, run.warps * mk);
  auto b = makeBuffer("b", info.operandDtype, run.warps * kn);
  auto c = makeBuffer("c", DType::F32, run.warps * mn);
  auto d = makeBuffer("d", DType::F32, run.warps * mn);
  auto aIndex = makeBuffer("a_index", DType::I64, 32 * info.aElements);
  auto bIndex = makeBuffer("b_index", DType::I64, 32 * info.bElements);
  auto cIndex = makeBuffer("c_index", DType::I64, 32 * info.cElements);
  auto fa = makeBuffer("fa", info.operandDtype, info.aElements, MemScope::Register);
  auto fb = makeBuffer("fb", info.operandDtype, info.bElements, MemScope::Register);
  // c at 0; d after it when it does not alias c.
  auto fc = makeBuffer("fc", DType::F32, 2 * info.cElements, MemScope::Register);
  const int64_t dOffset = run.inPlace ? 0 : info.cElements;
  return gpuKernel(
      "mma", {a, b, c, d, aIndex, bIndex, cIndex}, {1, 1, 1}, {32 * run.warps, 1, 1}, {},
      [&](const GpuCoords &coords) {
        ExprPtr t = coords.thread[0];
        ExprPtr lane = mod(t, index(32)), warp = div(t, index(32));
        auto it = makeVar("it"), e = makeVar("e");
        StmtPtr products =
            forRange(it, run.iterations, ForKind::Serial,
                     mma(run.kind, Fragment{fc, dOffset}, Fragment{fa, 0}, Fragment{fb, 0},
                         Fragment{fc, 0}));
        StmtPtr result = forRange(
            e, info.cElements, ForKind::Serial,
            store(d,
                  add(mul(warp, index(mn)),
                      load(cIndex, add(mul(lane, index(info.cElements)), kir::ref(e)))),
                  load(fc, add(kir::ref(e), index(dOffset)))));
        return allocate(
            fa, allocate(fb, allocate(fc, seq({
                                              loadFragment(fa, a, mul(warp, index(mk)), aIndex,
                                                           lane, info.aElements, "ea"),
                                              loadFragment(fb, b, mul(warp, index(kn)), bIndex,
                                                           lane, info.bElements, "eb"),
                                              loadFragment(fc, c, mul(warp, index(mn)), cIndex,
                                                           lane, info.cElements, "ec"),
                                              products,
                                              result,
                                          }))));
      });
}

/// Random operands: A and B uniform in [-6, 6) rounded to their dtype (odd
/// significands and negatives), C in [-3, 3) f32; D poisoned with NaN.
std::vector<HostTensor> mmaParams(const Kernel &kernel, MmaKind kind, uint64_t seed) {
  Rng rng(seed);
  std::vector<HostTensor> params;
  for (int p = 0; p < 4; ++p) {
    const Buffer &buffer = *kernel.params[static_cast<size_t>(p)];
    HostTensor t(buffer.dtype, {buffer.size});
    for (int64_t i = 0; i < buffer.size; ++i)
      t.setDouble(i, p < 2 ? rng.uniform(-6, 6) : p == 2 ? rng.uniform(-3, 3) : std::nan(""));
    params.push_back(std::move(t));
  }
  params.push_back(fragmentIndices(kind, MmaOperand::A));
  params.push_back(fragmentIndices(kind, MmaOperand::B));
  params.push_back(fragmentIndices(kind, MmaOperand::C));
  return params;
}

/// An operand as the tensor core sees it (tf32 operands rounded).
double operand(MmaKind kind, const HostTensor &t, int64_t i) {
  double v = t.getDouble(i);
  return kind == MmaKind::TF32_M16N8K8 ? roundFloatToTf32(static_cast<float>(v)) : v;
}

void checkMma(const MmaRun &run, uint64_t seed) {
  const MmaShapeInfo &info = mmaShapeInfo(run.kind);
  Kernel kernel = mmaKernel(run);
  std::vector<HostTensor> params = mmaParams(kernel, run.kind, seed);
  const HostTensor a = params[0], b = params[1], c = params[2];
  auto stats = sim::simulateKernel(kernel, params);
  INFO(mmaKindName(run.kind) << " warps " << run.warps << " iterations " << run.iterations
                             << (run.inPlace ? " in place" : ""));
  REQUIRE(stats.has_value());
  CHECK(stats->mmas == run.warps * run.iterations);
  const int m = info.m, n = info.n, k = info.k;
  double worstUnrounded = 0;
  for (int w = 0; w < run.warps; ++w)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        // The documented order: products rounded to f32, added to C one by one in f32.
        float ordered = static_cast<float>(c.getDouble(w * m * n + i * n + j));
        double exact = ordered, magnitude = std::fabs(exact), unrounded = 0;
        for (int it = 0; it < run.iterations; ++it)
          for (int p = 0; p < k; ++p) {
            double x = operand(run.kind, a, w * m * k + i * k + p);
            double y = operand(run.kind, b, w * k * n + p * n + j);
            ordered += static_cast<float>(x * y);
            exact += x * y;
            magnitude += std::fabs(x * y);
            unrounded += a.getDouble(w * m * k + i * k + p) * b.getDouble(w * k * n + p * n + j);
          }
        double got = params[3].getDouble(w * m * n + i * n + j);
        INFO("warp " << w << " D[" << i << "][" << j << "]");
        CHECK(static_cast<float>(got) == ordered);
        // A sequential f32 sum of (additions) terms errs by at most
        // additions x 2^-24 x the sum of their magnitudes.
        double tolerance = run.iterations * k * std::ldexp(magnitude, -24);
        CHECK(std::fabs(got - exact) <= tolerance);
        unrounded += c.getDouble(w * m * n + i * n + j);
        worstUnrounded = std::max(worstUnrounded, std::fabs(got - unrounded) / tolerance);
      }
  // The tf32 rounding is visible: the f32 operands' own product is far off.
  if (run.kind == MmaKind::TF32_M16N8K8)
    CHECK(worstUnrounded > 10);
}

} // namespace

TEST_CASE("sim mma: every kind against an fp64 product", "[sim][mma]") {
  for (MmaKind kind : {MmaKind::F16_M16N8K16, MmaKind::BF16_M16N8K16, MmaKind::TF32_M16N8K8,
                       MmaKind::E4M3_M16N8K32}) {
    checkMma({kind, 1, 1, true}, 21);
    checkMma({kind, 2, 1, false}, 22);
    checkMma({kind, 2, 2, true}, 23); // two products accumulate into one fragment
  }
}

TEST_CASE("sim mma: NaN and infinity propagate", "[sim][mma]") {
  MmaRun run{MmaKind::F16_M16N8K16, 1, 1, true};
  Kernel kernel = mmaKernel(run);
  std::vector<HostTensor> params = mmaParams(kernel, run.kind, 5);
  params[0].setDouble(3 * 16 + 4, std::numeric_limits<double>::infinity()); // A[3][4]
  params[1].setDouble(2 * 8 + 5, std::nan(""));                            // B[2][5]
  REQUIRE(sim::simulateKernel(kernel, params).has_value());
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double v = params[3].getDouble(i * 8 + j);
      INFO("D[" << i << "][" << j << "] = " << v);
      if (j == 5)
        CHECK(std::isnan(v));
      else if (i == 3)
        CHECK((std::isinf(v) || std::isnan(v))); // inf x +-b, or inf x 0 (NaN)
      else
        CHECK(std::isfinite(v));
    }
}

TEST_CASE("sim mma: partial warps and unwritten fragments are reported", "[sim][mma]") {
  auto out = makeBuffer("out", DType::F32, 64);
  auto fa = makeBuffer("fa", DType::F16, 8, MemScope::Register);
  auto fb = makeBuffer("fb", DType::F16, 4, MemScope::Register);
  auto fc = makeBuffer("fc", DType::F32, 4, MemScope::Register);
  auto halfOne = floatImm(1.0, Type::scalar(DType::F16));
  // Fills the fragments (all but fa[2] of thread `skip`), then one mma.
  auto body = [&](ExprPtr t, int64_t skip) {
    auto e = makeVar("e"), f = makeVar("f");
    StmtPtr fill = seq({
        forRange(e, 8, ForKind::Serial,
                 ifThen(logicalOr(ne(t, index(skip)), ne(kir::ref(e), index(2))),
                        store(fa, kir::ref(e), halfOne))),
        forRange(f, 4, ForKind::Serial,
                 seq({store(fb, kir::ref(f), halfOne), store(fc, kir::ref(f), f32(0))})),
    });
    return seq({fill, mma(MmaKind::F16_M16N8K16, {fc, 0}, {fa, 0}, {fb, 0}, {fc, 0}),
                store(out, t, load(fc, index(0)))});
  };
  auto withFragments = [&](StmtPtr s) { return allocate(fa, allocate(fb, allocate(fc, s))); };
  SECTION("a block of 48 threads") {
    Kernel kernel = gpuKernel("partial", {out}, {1, 1, 1}, {48, 1, 1}, {},
                              [&](const GpuCoords &c) { return withFragments(body(c.thread[0], -1)); });
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel partial: mma.f16.m16n8k16 in warp 1 of block (0,0,0), which has only 16 "
          "threads (the block's 48 threads are not a multiple of 32)");
  }
  SECTION("half a warp inside an if") {
    Kernel kernel = gpuKernel("halfwarp", {out}, {1, 1, 1}, {64, 1, 1}, {}, [&](const GpuCoords &c) {
      return withFragments(ifThen(lt(c.thread[0], index(48)), body(c.thread[0], -1)));
    });
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel halfwarp: mma.f16.m16n8k16 reached by 16 of 32 lanes of warp 1 of block "
          "(0,0,0); thread (48,0,0) (lane 16) did not reach it");
  }
  SECTION("an unwritten operand") {
    Kernel kernel = gpuKernel("unwritten", {out}, {1, 1, 1}, {64, 1, 1}, {},
                              [&](const GpuCoords &c) { return withFragments(body(c.thread[0], 35)); });
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel unwritten: read of register fa[2], which no thread has written, by block "
          "(0,0,0) thread (35,0,0) (mma.f16.m16n8k16 operand a)");
  }
  SECTION("all of a warp's fragments are written") {
    Kernel kernel = gpuKernel("whole", {out}, {1, 1, 1}, {64, 1, 1}, {},
                              [&](const GpuCoords &c) { return withFragments(body(c.thread[0], -1)); });
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    auto stats = sim::simulateKernel(kernel, params);
    REQUIRE(stats.has_value());
    CHECK(stats->mmas == 2);
    for (int i = 0; i < 64; ++i)
      CHECK(params[0].getDouble(i) == 16.0); // a row of ones times a column of ones
  }
}

namespace {

/// An 8 x 40 tile of 16-bit values in shared memory (a padded row stride, so
/// rows are not contiguous); matrix j of an ldmatrix is columns 8j .. 8j+7.
constexpr int64_t kTileStride = 40, kTileSize = 8 * kTileStride;

struct LdMatrixKernel {
  int matrices = 4;
  bool transpose = false;
  DType dtype = DType::F16;
  /// The row index lane `lane` passes (default: row lane % 8 of matrix lane / 8).
  std::function<ExprPtr(ExprPtr lane)> rowIndex = [](ExprPtr lane) {
    return add(mul(mod(lane, index(8)), index(kTileStride)), mul(div(lane, index(8)), index(8)));
  };
  int64_t unfilled = -1;     ///< a tile element no thread writes
  int64_t lateWriter = -1;   ///< a thread that writes tile[0] again after the barrier
  int64_t threads = 32;
};

/// Threads fill the tile from `in`, barrier, then each warp's ldmatrix; lane l
/// stores its values (2 or, for 8-bit elements, 4 per matrix) to out[l * values + v].
Kernel ldMatrixKernel(const LdMatrixKernel &spec) {
  const int values = ldMatrixElementsPerMatrix(dtypeByteSize(spec.dtype)) * spec.matrices;
  auto in = makeBuffer("in", spec.dtype, kTileSize);
  auto out = makeBuffer("out", spec.dtype, spec.threads * values);
  auto tile = makeBuffer("tile", spec.dtype, kTileSize, MemScope::Shared);
  auto frag = makeBuffer("frag", spec.dtype, values, MemScope::Register);
  return gpuKernel("ldmatrix", {in, out}, {1, 1, 1}, {spec.threads, 1, 1}, {tile},
                   [&](const GpuCoords &c) {
                     ExprPtr t = c.thread[0];
                     auto q = makeVar("q"), v = makeVar("v");
                     ExprPtr element = add(mul(t, index(10)), kir::ref(q));
                     StmtPtr fill = ifThen(
                         logicalAnd(lt(element, index(kTileSize)), ne(element, index(spec.unfilled))),
                         store(tile, element, load(in, element)));
                     return seq({
                         forRange(q, 10, ForKind::Serial, fill),
                         barrier(),
                         spec.lateWriter >= 0
                             ? ifThen(eq(t, index(spec.lateWriter)),
                                      store(tile, index(0), load(in, index(0))))
                             : nullptr,
                         allocate(frag, seq({ldMatrix({frag, 0}, spec.matrices, spec.transpose,
                                                      tile, spec.rowIndex(mod(t, index(32)))),
                                             forRange(v, values, ForKind::Serial,
                                                      store(out,
                                                            add(mul(t, index(values)), kir::ref(v)),
                                                            load(frag, kir::ref(v))))})),
                     });
                   });
}

} // namespace

TEST_CASE("sim ldmatrix: x1, x2, x4 with and without trans", "[sim][mma]") {
  for (DType dtype : {DType::F16, DType::BF16})
    for (int matrices : {1, 2, 4})
      for (bool transpose : {false, true}) {
        LdMatrixKernel spec;
        spec.matrices = matrices;
        spec.transpose = transpose;
        spec.dtype = dtype;
        spec.threads = 64;
        Kernel kernel = ldMatrixKernel(spec);
        std::vector<HostTensor> params = test::randomTensors(kernel, 31);
        auto stats = sim::simulateKernel(kernel, params);
        INFO(dtypeName(dtype) << " x" << matrices << (transpose ? ".trans" : ""));
        REQUIRE(stats.has_value());
        CHECK(stats->sharedLoads == 2 * 64 * matrices); // two warps
        const int values = 2 * matrices;
        for (int thread = 0; thread < 64; ++thread)
          for (int v = 0; v < values; ++v) {
            // Written out from the ISA: lane l holds row l / 4, columns
            // 2 (l % 4) and 2 (l % 4) + 1 of each matrix; .trans the transpose.
            int lane = thread % 32, row = lane / 4, col = 2 * (lane % 4) + v % 2;
            if (transpose)
              std::swap(row, col);
            int64_t source = row * kTileStride + 8 * (v / 2) + col;
            INFO("thread " << thread << " value " << v);
            CHECK(params[1].getDouble(thread * values + v) == params[0].getDouble(source));
          }
      }
}

TEST_CASE("sim ldmatrix: 8-bit elements as byte pairs", "[sim][mma]") {
  for (int matrices : {1, 2, 4}) {
    LdMatrixKernel spec;
    spec.matrices = matrices;
    spec.dtype = DType::F8E4M3;
    spec.threads = 64;
    // Rows of 16 bytes: row r of matrix j at 32 r + 16 j (16-byte aligned).
    spec.rowIndex = [](ExprPtr lane) {
      return add(mul(mod(lane, index(8)), index(32)), mul(div(lane, index(8)), index(16)));
    };
    Kernel kernel = ldMatrixKernel(spec);
    std::vector<HostTensor> params = test::randomTensors(kernel, 17);
    auto stats = sim::simulateKernel(kernel, params);
    INFO("x" << matrices);
    REQUIRE(stats.has_value());
    CHECK(stats->sharedLoads == 4 * 64 * matrices);
    const int values = 4 * matrices;
    for (int thread = 0; thread < 64; ++thread)
      for (int v = 0; v < values; ++v) {
        // From the ISA's b16 layout: lane l holds the 16-bit value at row l / 4, column
        // 2 (l % 4) (+1) of each matrix, i.e. bytes 4 (l % 4) .. 4 (l % 4) + 3, low first.
        int lane = thread % 32, row = lane / 4, col = 4 * (lane % 4) + v % 4;
        int64_t source = 32 * row + 16 * (v / 4) + col;
        INFO("thread " << thread << " value " << v);
        CHECK(params[1].getDouble(thread * values + v) == params[0].getDouble(source));
      }
  }
  // .trans would move bytes in pairs: such an ldmatrix cannot be built (NodeChecksTest).
}

TEST_CASE("sim ldmatrix: bad rows, unwritten elements, races and partial warps", "[sim][mma]") {
  LdMatrixKernel spec;
  SECTION("a misaligned row") {
    spec.rowIndex = [](ExprPtr lane) {
      return add(mul(lane, index(8)), select(eq(lane, index(3)), index(4), index(0)));
    };
    Kernel kernel = ldMatrixKernel(spec);
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel ldmatrix: misaligned 8-lane ldmatrix row tile[28] by block (0,0,0) thread "
          "(3,0,0): a vector access of shared memory must start at a multiple of 8");
  }
  SECTION("a row past the end") {
    spec.matrices = 2;
    spec.rowIndex = [](ExprPtr lane) { return mul(lane, index(24)); }; // lane 14: 336
    Kernel kernel = ldMatrixKernel(spec);
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel ldmatrix: out-of-bounds ldmatrix row tile[336] (tile has 320 elements; 8-lane "
          "access at tile[336]) by block (0,0,0) thread (14,0,0)");
  }
  SECTION("lanes whose row no matrix uses may pass anything") {
    spec.matrices = 1;
    spec.rowIndex = [](ExprPtr lane) {
      return select(lt(lane, index(8)), mul(lane, index(kTileStride)), index(-77));
    };
    Kernel kernel = ldMatrixKernel(spec);
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    REQUIRE(sim::simulateKernel(kernel, params).has_value());
    CHECK(params[1].getDouble(2 * 5 + 1) == params[0].getDouble(1 * kTileStride + 3));
  }
  SECTION("an element no thread wrote") {
    spec.unfilled = 2 * kTileStride + 8 + 5; // matrix 1, row 2, column 5: lane 10's second value
    Kernel kernel = ldMatrixKernel(spec);
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel ldmatrix: ldmatrix.x4 read of shared tile[93], which no thread has written, by "
          "block (0,0,0) thread (10,0,0)");
  }
  SECTION("a write by another thread without a barrier") {
    spec.lateWriter = 7;
    spec.transpose = true;
    Kernel kernel = ldMatrixKernel(spec);
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel ldmatrix: read/write race on shared tile[0] in block (0,0,0): thread (7,0,0) "
          "writes it and thread (0,0,0) reads it with no barrier between");
  }
  SECTION("a partial warp") {
    spec.threads = 40;
    Kernel kernel = ldMatrixKernel(spec);
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel ldmatrix: ldmatrix.x4 in warp 1 of block (0,0,0), which has only 8 threads "
          "(the block's 40 threads are not a multiple of 32)");
  }
}

namespace {

constexpr int64_t kTiles = 3, kTile = 128; // 32 threads x 4 f32 (one 16-byte copy each)

/// A two-stage pipeline over kTiles tiles of `in`: the copy of tile k + 1 is
/// in flight while tile k is read (reversed, so threads read each other's
/// copies), after async_wait `waitPending`.
Kernel pipelineKernel(int waitPending) {
  auto in = makeBuffer("in", DType::F32, kTiles * kTile);
  auto out = makeBuffer("out", DType::F32, kTiles * kTile);
  auto stage = makeBuffer("stage", DType::F32, 2 * kTile, MemScope::Shared);
  return gpuKernel("pipeline", {in, out}, {1, 1, 1}, {32, 1, 1}, {stage}, [&](const GpuCoords &c) {
    ExprPtr t4 = mul(c.thread[0], index(4));
    auto issue = [&](ExprPtr tile) {
      return asyncCopy(stage, add(mul(mod(tile, index(2)), index(kTile)), t4), in,
                       add(mul(tile, index(kTile)), t4), 4);
    };
    auto k = makeVar("k");
    ExprPtr tile = kir::ref(k), next = add(kir::ref(k), index(1));
    ExprPtr reversed = mul(sub(index(31), c.thread[0]), index(4));
    StmtPtr step = seq({
        ifThen(lt(next, index(kTiles)), issue(next)),
        asyncCommit(), // every iteration commits, an empty group at the end
        asyncWait(waitPending),
        barrier(),
        store(out, add(mul(tile, index(kTile)), t4),
              load(stage, add(mul(mod(tile, index(2)), index(kTile)), reversed), 4)),
        barrier(), // before the next iteration's copy overwrites this stage
    });
    return seq({issue(index(0)), asyncCommit(), forRange(k, kTiles, ForKind::Serial, step)});
  });
}

/// One copy per thread of in[4t .. 4t+3] into stage[4t ..] with `copy`'s
/// indices and predicate, then `after` (commit, wait, ...), then a read back.
Kernel copyKernel(const std::string &name,
                  const std::function<StmtPtr(ExprPtr t, BufferPtr in, BufferPtr stage)> &copy,
                  std::vector<StmtPtr> after, bool readBack = true) {
  auto in = makeBuffer("in", DType::F32, kTile);
  auto out = makeBuffer("out", DType::F32, kTile);
  auto stage = makeBuffer("stage", DType::F32, kTile, MemScope::Shared);
  return gpuKernel(name, {in, out}, {1, 1, 1}, {32, 1, 1}, {stage}, [&](const GpuCoords &c) {
    ExprPtr t4 = mul(c.thread[0], index(4));
    std::vector<StmtPtr> body{copy(c.thread[0], in, stage)};
    body.insert(body.end(), after.begin(), after.end());
    if (readBack)
      body.push_back(store(out, t4, load(stage, t4, 4)));
    return seq(body);
  });
}

StmtPtr plainCopy(ExprPtr t, BufferPtr in, BufferPtr stage) {
  ExprPtr t4 = mul(t, index(4));
  return asyncCopy(stage, t4, in, t4, 4);
}

} // namespace

TEST_CASE("sim async copies: a two-stage pipeline that waits correctly", "[sim][async]") {
  Kernel kernel = pipelineKernel(1);
  std::vector<HostTensor> params = test::randomTensors(kernel, 41);
  auto stats = sim::simulateKernel(kernel, params);
  INFO(printKernel(kernel));
  REQUIRE(stats.has_value());
  CHECK(stats->asyncCopies == 32 * kTiles);
  CHECK(stats->globalLoads == kTiles * kTile);
  CHECK(stats->sharedStores == kTiles * kTile); // the copies, as they land
  for (int64_t k = 0; k < kTiles; ++k)
    for (int64_t t = 0; t < 32; ++t)
      for (int64_t l = 0; l < 4; ++l)
        CHECK(params[1].getDouble(k * kTile + 4 * t + l) ==
              params[0].getDouble(k * kTile + 4 * (31 - t) + l));
}

TEST_CASE("sim async copies: reads before the wait are reported", "[sim][async]") {
  SECTION("a pipeline that waits for one group too few") {
    Kernel kernel = pipelineKernel(2);
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel pipeline: read of shared stage[124] by block (0,0,0) thread (0,0,0) while an "
          "async copy into it is in flight (issued by thread (31,0,0), not yet retired by an "
          "async wait)");
  }
  SECTION("a wait does not retire uncommitted copies") {
    Kernel kernel = copyKernel("uncommitted", plainCopy, {asyncWait(0)});
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel uncommitted: read of shared stage[0] by block (0,0,0) thread (0,0,0) while an "
          "async copy into it is in flight (issued by thread (0,0,0), not yet retired by an "
          "async wait)");
  }
  SECTION("a first read with no wait at all") {
    Kernel kernel = copyKernel("nowait", plainCopy, {asyncCommit()});
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel nowait: read of shared stage[0] by block (0,0,0) thread (0,0,0) while an async "
          "copy into it is in flight (issued by thread (0,0,0), not yet retired by an async "
          "wait)");
  }
  SECTION("committed and waited for, the thread reads its own copy") {
    Kernel kernel = copyKernel("own", plainCopy, {asyncCommit(), asyncWait(0)});
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    REQUIRE(sim::simulateKernel(kernel, params).has_value());
    CHECK(test::sameBytes(params[0], params[1]));
  }
}

TEST_CASE("sim async copies: commits and waits with no copies", "[sim][async]") {
  // Groups may be empty (a pipeline's last stages): committing and waiting is fine.
  auto out = makeBuffer("out", DType::F32, 32);
  Kernel kernel = gpuKernel("empty_groups", {out}, {2, 1, 1}, {32, 1, 1}, {},
                            [&](const GpuCoords &c) {
                              return seq({asyncCommit(), asyncCommit(), asyncWait(1), asyncWait(0),
                                          store(out, c.thread[0], f32(1))});
                            });
  std::vector<HostTensor> params = test::randomTensors(kernel, 1);
  auto stats = sim::simulateKernel(kernel, params);
  REQUIRE(stats.has_value());
  CHECK(stats->asyncCopies == 0);
  CHECK(params[0].getDouble(31) == 1.0);
}

TEST_CASE("sim async copies: a false predicate reads nothing and lands zeros", "[sim][async]") {
  // Threads 16.. pass a source index far out of bounds: fine, it is never read.
  auto predicated = [](ExprPtr t, BufferPtr in, BufferPtr stage) {
    ExprPtr t4 = mul(t, index(4));
    ExprPtr inside = lt(t, index(16));
    return asyncCopy(stage, t4, in, select(inside, t4, index(int64_t{1} << 40)), 4, inside);
  };
  Kernel kernel = copyKernel("zeros", predicated, {asyncCommit(), asyncWait(0)});
  std::vector<HostTensor> params = test::randomTensors(kernel, 3);
  auto stats = sim::simulateKernel(kernel, params);
  REQUIRE(stats.has_value());
  CHECK(stats->asyncCopies == 32);
  CHECK(stats->globalLoads == 16 * 4);
  for (int64_t i = 0; i < kTile; ++i)
    CHECK(params[1].getDouble(i) == (i < 64 ? params[0].getDouble(i) : 0.0));
}

TEST_CASE("sim async copies: misuse is reported", "[sim][async]") {
  SECTION("a misaligned destination") {
    Kernel kernel = copyKernel(
        "misaligned",
        [](ExprPtr t, BufferPtr in, BufferPtr stage) {
          return asyncCopy(stage, add(mul(t, index(4)), index(2)), in, mul(t, index(4)), 4);
        },
        {asyncCommit(), asyncWait(0)}, false);
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel misaligned: misaligned 4-lane async copy write stage[2] by block (0,0,0) "
          "thread (0,0,0): a vector access of shared memory must start at a multiple of 4");
  }
  SECTION("a misaligned source") {
    Kernel kernel = copyKernel(
        "misaligned",
        [](ExprPtr t, BufferPtr in, BufferPtr stage) {
          return asyncCopy(stage, mul(t, index(4)), in, add(mul(t, index(2)), index(2)), 4);
        },
        {asyncCommit(), asyncWait(0)}, false);
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel misaligned: misaligned 4-lane async copy read in[2] by block (0,0,0) thread "
          "(0,0,0): a vector access of global memory must start at a multiple of 4");
  }
  SECTION("an out-of-bounds source under a true predicate") {
    Kernel kernel = copyKernel(
        "past_end",
        [](ExprPtr t, BufferPtr in, BufferPtr stage) {
          return asyncCopy(stage, mul(t, index(4)), in, mul(add(t, index(1)), index(4)), 4);
        },
        {asyncCommit(), asyncWait(0)}, false);
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel past_end: out-of-bounds async copy read in[128] (in has 128 elements; 4-lane "
          "access at in[128]) by block (0,0,0) thread (31,0,0)");
  }
  SECTION("copies never waited for") {
    Kernel committed = copyKernel("unwaited", plainCopy, {asyncCommit()}, false);
    std::vector<HostTensor> params = test::randomTensors(committed, 1);
    CHECK(test::simulationError(committed, params) ==
          "kernel unwaited: async copy into shared stage[0] (and 3 more elements) by block "
          "(0,0,0) thread (0,0,0) was never waited for: no async wait retired its group before "
          "the block ended");
    Kernel uncommitted = copyKernel("uncommitted", plainCopy, {asyncWait(0)}, false);
    CHECK(test::simulationError(uncommitted, params) ==
          "kernel uncommitted: async copy into shared stage[0] (and 3 more elements) by block "
          "(0,0,0) thread (0,0,0) was never waited for: it was not committed (async_commit) and "
          "retired (async_wait) before the block ended");
  }
  SECTION("a store into a copy's destination while it is in flight") {
    auto in = makeBuffer("in", DType::F32, kTile);
    auto stage = makeBuffer("stage", DType::F32, kTile, MemScope::Shared);
    Kernel overwrite = gpuKernel("overwrite", {in}, {1, 1, 1}, {32, 1, 1}, {stage},
                                 [&](const GpuCoords &c) {
                                   ExprPtr t4 = mul(c.thread[0], index(4));
                                   return seq({asyncCopy(stage, t4, in, t4, 4),
                                               store(stage, add(t4, index(1)), f32(2)),
                                               asyncCommit(), asyncWait(0)});
                                 });
    std::vector<HostTensor> params = test::randomTensors(overwrite, 1);
    CHECK(test::simulationError(overwrite, params) ==
          "kernel overwrite: write of shared stage[1] by block (0,0,0) thread (0,0,0) while an "
          "async copy into it is in flight (issued by thread (0,0,0), not yet retired by an async "
          "wait)");
  }
  SECTION("a copy landing on an element another thread read since the last barrier") {
    auto in = makeBuffer("in", DType::F32, kTile);
    auto out = makeBuffer("out", DType::F32, 1);
    auto stage = makeBuffer("stage", DType::F32, kTile, MemScope::Shared);
    Kernel kernel = gpuKernel("late", {in, out}, {1, 1, 1}, {32, 1, 1}, {stage},
                              [&](const GpuCoords &c) {
                                ExprPtr t4 = mul(c.thread[0], index(4));
                                return seq({store(stage, t4, load(in, t4, 4)), barrier(),
                                            ifThen(eq(c.thread[0], index(1)),
                                                   store(out, index(0), load(stage, index(0)))),
                                            asyncCopy(stage, t4, in, t4, 4), asyncCommit(),
                                            asyncWait(0)});
                              });
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel late: read/write race on shared stage[0] in block (0,0,0): thread (1,0,0) "
          "reads it and thread (0,0,0) writes it with no barrier between");
  }
}

TEST_CASE("sim tensor cores: async copy, ldmatrix and mma together", "[sim][mma][async]") {
  // D (16 x 8) = A (16 x 16, row-major) x B (16 x 8, row-major) in f16: both
  // copied into shared memory with cp.async, A read with ldmatrix.x4, B with
  // ldmatrix.x2.trans, as a tensor-core GEMM's inner step does.
  const MmaKind kind = MmaKind::F16_M16N8K16;
  auto a = makeBuffer("a", DType::F16, 256), b = makeBuffer("b", DType::F16, 128);
  auto d = makeBuffer("d", DType::F32, 128), cIndex = makeBuffer("c_index", DType::I64, 128);
  auto sa = makeBuffer("sa", DType::F16, 256, MemScope::Shared);
  auto sb = makeBuffer("sb", DType::F16, 128, MemScope::Shared);
  auto fa = makeBuffer("fa", DType::F16, 8, MemScope::Register);
  auto fb = makeBuffer("fb", DType::F16, 4, MemScope::Register);
  auto fc = makeBuffer("fc", DType::F32, 4, MemScope::Register);
  Kernel kernel = gpuKernel(
      "gemm_step", {a, b, d, cIndex}, {1, 1, 1}, {32, 1, 1}, {sa, sb}, [&](const GpuCoords &c) {
        ExprPtr t = c.thread[0], t8 = mul(t, index(8));
        auto e = makeVar("e"), f = makeVar("f");
        // Lane l addresses row l % 8 of matrix l / 8; A's matrices are its
        // quarters in the order of the a fragment: rows 0-7 and 8-15 of
        // columns 0-7, then of columns 8-15.
        ExprPtr aRow = add(mul(add(mod(t, index(8)), mul(mod(div(t, index(8)), index(2)), index(8))),
                               index(16)),
                           mul(div(t, index(16)), index(8)));
        ExprPtr bRow = mul(mod(t, index(16)), index(8)); // lanes 0..15: k rows 0..15
        return allocate(fa, allocate(fb, allocate(fc, seq({
            asyncCopy(sa, t8, a, t8, 8),
            ifThen(lt(t, index(16)), asyncCopy(sb, t8, b, t8, 8)),
            asyncCommit(),
            asyncWait(0),
            barrier(),
            ldMatrix({fa, 0}, 4, false, sa, aRow),
            ldMatrix({fb, 0}, 2, true, sb, bRow),
            forRange(e, 4, ForKind::Serial, store(fc, kir::ref(e), f32(0))),
            mma(kind, {fc, 0}, {fa, 0}, {fb, 0}, {fc, 0}),
            forRange(f, 4, ForKind::Serial,
                     store(d, load(cIndex, add(mul(t, index(4)), kir::ref(f))),
                           load(fc, kir::ref(f)))),
        }))));
      });
  std::vector<HostTensor> params = test::randomTensors(kernel, 51);
  params[3] = fragmentIndices(kind, MmaOperand::C);
  auto stats = sim::simulateKernel(kernel, params);
  REQUIRE(stats.has_value());
  CHECK(stats->mmas == 1);
  CHECK(stats->asyncCopies == 48);
  CHECK(stats->sharedLoads == 4 * 64 + 2 * 64);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double exact = 0, magnitude = 0;
      for (int p = 0; p < 16; ++p) {
        double term = params[0].getDouble(i * 16 + p) * params[1].getDouble(p * 8 + j);
        exact += term;
        magnitude += std::fabs(term);
      }
      INFO("D[" << i << "][" << j << "]");
      CHECK(std::fabs(params[2].getDouble(i * 8 + j) - exact) <= 16 * std::ldexp(magnitude, -24));
    }
}
