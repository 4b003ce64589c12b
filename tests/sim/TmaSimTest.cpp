// The simulator's bulk tensor copies, mbarriers and warp-specialized fibers: a producer
// warpgroup filling stages through tensor maps and a consumer warpgroup running wgmma on them
// (tests/codegen/gpu/TmaKernels.h) against an fp64 product, boxes hanging over the tensor's
// edge read as zeros, and the misuses the simulator must report: a stage released while its
// products may still read it, bytes nobody expected, a stage read before its copies landed,
// a barrier used before the block saw its init, and two fibers waiting for each other.
#include "SimTestUtil.h"

#include "ir/kernel/TensorMap.h"
#include "runtime/sim/Simulator.h"
#include "tests/codegen/gpu/TmaKernels.h"

#include <cmath>

using namespace kiln;
using namespace kiln::kir;

namespace {

using TmaRun = kiln::testing::TmaKernelSpec;

struct TmaResult {
  Expected<sim::SimStats> stats;
  std::vector<HostTensor> params;
};

TmaResult runTma(const TmaRun &run, uint64_t seed = 11) {
  Kernel kernel = testing::tmaPipelineKernel(run);
  Rng rng(seed);
  std::vector<HostTensor> params;
  for (const BufferPtr &buffer : kernel.params) {
    HostTensor t(buffer->dtype, {buffer->size});
    for (int64_t i = 0; i < buffer->size; ++i)
      t.setDouble(i, buffer->dtype == DType::F32 ? std::nan("") : rng.uniform(-2, 2));
    params.push_back(std::move(t));
  }
  auto stats = sim::simulateKernel(kernel, params);
  return {std::move(stats), std::move(params)};
}

/// D against the fp64 product of A (rows past m are zeros) and B^T, within the f32 sum's bound.
void checkProduct(const TmaRun &run, const std::vector<HostTensor> &params) {
  const int64_t k = 64 * run.kTiles, n = run.n;
  const HostTensor &a = params[0], &b = params[1], &d = params[2];
  for (int64_t i = 0; i < kWgmmaM; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double exact = 0, magnitude = 0;
      for (int64_t p = 0; p < k && i < run.m; ++p) {
        double x = a.getDouble(i * k + p) * b.getDouble(j * k + p);
        exact += x;
        magnitude += std::fabs(x);
      }
      INFO("D[" << i << "][" << j << "]");
      CHECK(std::fabs(d.getDouble(i * n + j) - exact) <=
            static_cast<double>(k) * std::ldexp(magnitude, -24));
    }
}

} // namespace

TEST_CASE("sim tma: a producer and a consumer warpgroup against fp64", "[sim][tma]") {
  for (int stages : {2, 3})
    for (int n : {64, 136, 256})
      for (int kTiles : {1, 5}) {
        TmaRun run;
        run.n = n;
        run.stages = stages;
        run.kTiles = kTiles;
        INFO("n " << n << ", " << stages << " stages, " << kTiles << " K tiles");
        TmaResult result = runTma(run);
        INFO((result.stats ? std::string() : result.stats.error().str()));
        REQUIRE(result.stats);
        CHECK(result.stats->bulkCopies == 2 * kTiles);
        CHECK(result.stats->mmas == 4 * kTiles);
        CHECK(result.stats->forkedBranches == 1);
        checkProduct(run, result.params);
      }
}

TEST_CASE("sim tma: boxes over the tensor's edge read zeros", "[sim][tma]") {
  for (int64_t m : {1, 37, 63}) {
    TmaRun run;
    run.m = m;
    run.kTiles = 3;
    INFO("m " << m);
    TmaResult result = runTma(run);
    INFO((result.stats ? std::string() : result.stats.error().str()));
    REQUIRE(result.stats);
    checkProduct(run, result.params);
  }
}

TEST_CASE("sim tma: misuse is reported", "[sim][tma]") {
  using Catch::Matchers::Contains;
  auto error = [](const TmaRun &run) {
    TmaResult result = runTma(run);
    REQUIRE_FALSE(result.stats);
    return result.stats.error().str();
  };
  // The consumer hands the stage back while its products may still read it: the producer,
  // woken at once, copies into it.
  TmaRun early;
  early.releaseEarly = true;
  CHECK_THAT(error(early), Contains("while a wgmma reading it is in flight"));
  // A plain arrive completes the phase before the copies land: the products read nothing.
  TmaRun noExpect;
  noExpect.expectTx = false;
  CHECK_THAT(error(noExpect), Contains("which no thread has written"));
  TmaRun shortExpect;
  shortExpect.expectShort = true;
  CHECK_THAT(error(shortExpect), Contains("more than its phase expects"));
  TmaRun noWait;
  noWait.waitFull = false;
  CHECK_THAT(error(noWait), Contains("while a bulk tensor copy into it is in flight"));
  TmaRun noBarrier;
  noBarrier.barrierAfterInit = false;
  CHECK_THAT(error(noBarrier), Contains("initialized with no barrier since"));
  TmaRun stuck;
  stuck.wrongProducerParity = true;
  std::string deadlock = error(stuck);
  CHECK_THAT(deadlock, Contains("deadlock"));
  CHECK_THAT(deadlock, Contains("wait on mbarrier bars[2]"));
  CHECK_THAT(deadlock, Contains("wait on mbarrier bars[0]"));
}

TEST_CASE("sim tma: a second copy into a box in flight is reported", "[sim][tma]") {
  // One thread expects two boxes' bytes and copies both into the same destination.
  auto a = makeBuffer("a", DType::BF16, 64 * 64);
  auto map = std::make_shared<TensorMap>(
      TensorMap{"a_map", a, {64, 64}, {64}, {64, 8}, TmaSwizzle::Bytes128});
  auto tile = makeBuffer("tile", DType::BF16, 1024, MemScope::Shared);
  auto bars = makeBuffer("bars", DType::I64, 1, MemScope::Shared);
  auto tv = makeVar("t");
  ExprPtr first = eq(kir::ref(tv), index(0));
  StmtPtr copy = tmaLoad(tile, index(0), map, {index(0), index(0)}, bars, index(0));
  StmtPtr body = seq({ifThen(first, mbarrierInit(bars, index(0), 1)), barrier(),
                      ifThen(first, seq({mbarrierArriveExpectTx(bars, index(0), 2 * 1024), copy,
                                         copy, mbarrierWait(bars, index(0), index(0))}))});
  Kernel kernel{"double_copy", {a},
                allocate(tile, allocate(bars, forRange(tv, 32, ForKind::ThreadX, body)))};
  HostTensor input(DType::BF16, {a->size});
  std::vector<HostTensor> params{input};
  auto run = sim::simulateKernel(kernel, params);
  REQUIRE_FALSE(run);
  CHECK_THAT(run.error().str(),
             Catch::Matchers::Contains("bulk copy write of shared tile[0]") &&
                 Catch::Matchers::Contains("while a bulk tensor copy into it is in flight"));
}

TEST_CASE("tensor maps: malformed maps and copies are named", "[sim][tma]") {
  using Catch::Matchers::Contains;
  auto global = makeBuffer("x", DType::BF16, 64 * 200);
  TensorMap good{"m", global, {200, 64}, {200}, {64, 64}, TmaSwizzle::Bytes128};
  CHECK_FALSE(tensorMapProblem(good));
  TensorMap oddStride = good;
  oddStride.strides = {201}; // 402 bytes: not a multiple of 16
  CHECK_THAT(*tensorMapProblem(oddStride), Contains("not a multiple of 16 bytes"));
  TensorMap wideRow = good;
  wideRow.box = {128, 64}; // 256-byte rows cannot take the 128-byte swizzle
  CHECK_THAT(*tensorMapProblem(wideRow), Contains("exactly 128"));
  TensorMap bigBox = good;
  bigBox.box = {64, 300};
  CHECK_THAT(*tensorMapProblem(bigBox), Contains("box extent 300"));
  TensorMap tooLong = good;
  tooLong.dims = {200, 65};
  CHECK_THAT(*tensorMapProblem(tooLong), Contains("spans more than"));
  // The box's first row lands as is, the second XOR-swizzled by one 16-byte chunk.
  CHECK(tmaBoxByte(good, 8) == 16);
  CHECK(tmaBoxByte(good, 64) == 128 + 16);
  CHECK(tmaBoxByte(good, 64 + 8) == 128);
}
