// The simulator's warpgroup products: operands read through their descriptors from tiles laid
// out by the ISA's canonical 128-byte swizzled layouts (ir/kernel/WgmmaLayout.h) against an
// fp64 product, both orientations of 16-bit operands, and the misuses it must report: a
// product never waited for, a partial warpgroup, operands that differ across the warpgroup,
// accumulators read before the wait, operands written while a product may read them, and
// the fences a product needs after tile and accumulator stores. The kernel is TensorCoreKernels.h's, which
// test_gpu runs on an sm_90a GPU.
#include "SimTestUtil.h"

#include "ir/kernel/WgmmaLayout.h"
#include "runtime/sim/Simulator.h"
#include "tests/codegen/gpu/TensorCoreKernels.h"

#include <algorithm>
#include <cmath>

using namespace kiln;
using namespace kiln::kir;

namespace {

using WgmmaRun = kiln::testing::WgmmaKernelSpec;

HostTensor indexTensor(const std::vector<int64_t> &values) {
  HostTensor t(DType::I64, {int64_t(values.size())});
  std::ranges::copy(values, t.as<int64_t>().begin());
  return t;
}

struct WgmmaResult {
  Expected<sim::SimStats> stats;
  std::vector<HostTensor> params;
};

WgmmaResult runWgmma(const WgmmaRun &run, uint64_t seed = 5) {
  Kernel kernel = testing::wgmmaKernel(run);
  Rng rng(seed);
  std::vector<HostTensor> params;
  for (int p = 0; p < 3; ++p) {
    const Buffer &buffer = *kernel.params[static_cast<size_t>(p)];
    HostTensor t(buffer.dtype, {buffer.size});
    for (int64_t i = 0; i < buffer.size; ++i)
      t.setDouble(i, p < 2 ? rng.uniform(-4, 4) : std::nan(""));
    params.push_back(std::move(t));
  }
  params.push_back(indexTensor(testing::wgmmaTileIndices(run.kind, run.aMnMajor, kWgmmaM)));
  params.push_back(indexTensor(testing::wgmmaTileIndices(run.kind, run.bMnMajor, run.n)));
  params.push_back(indexTensor(testing::wgmmaAccumulatorIndices(run.n)));
  auto stats = sim::simulateKernel(kernel, params);
  return {std::move(stats), std::move(params)};
}

/// D against the fp64 product: each element within the f32 sum's bound.
void checkProduct(const WgmmaRun &run, const std::vector<HostTensor> &params) {
  const int k = wgmmaShapeInfo(run.kind).k, n = run.n;
  const HostTensor &a = params[0], &b = params[1], &d = params[2];
  for (int g = 0; g < run.warpgroups; ++g)
    for (int i = 0; i < kWgmmaM; ++i)
      for (int j = 0; j < n; ++j) {
        double exact = 0, magnitude = 0;
        for (int p = 0; p < k; ++p) {
          double x = a.getDouble(i * k + p) * b.getDouble(j * k + p);
          exact += x;
          magnitude += std::fabs(x);
        }
        INFO("warpgroup " << g << " D[" << i << "][" << j << "]");
        CHECK(std::fabs(d.getDouble((g * kWgmmaM + i) * n + j) - exact) <=
              k * std::ldexp(magnitude, -24));
      }
}

} // namespace

TEST_CASE("sim wgmma: products through descriptors against fp64", "[sim][wgmma]") {
  for (WgmmaKind kind : {WgmmaKind::BF16_K16, WgmmaKind::F16_K16})
    for (bool aMn : {false, true})
      for (bool bMn : {false, true})
        for (int n : {64, 128}) {
          WgmmaRun run{kind, n, aMn, bMn};
          INFO(wgmmaKindName(kind) << " n" << n << " a " << (aMn ? "MN" : "K") << "-major, b "
                                   << (bMn ? "MN" : "K") << "-major");
          WgmmaResult result = runWgmma(run);
          INFO((result.stats ? std::string() : result.stats.error().str()));
          REQUIRE(result.stats);
          CHECK(result.stats->mmas == 1);
          checkProduct(run, result.params);
        }
  // K-major only: e4m3 (k 32) at a narrow and a full N; two warpgroups, each its own product.
  for (int n : {8, 24, 256}) {
    WgmmaRun run{WgmmaKind::E4M3_K32, n};
    WgmmaResult result = runWgmma(run);
    INFO((result.stats ? std::string() : result.stats.error().str()));
    REQUIRE(result.stats);
    checkProduct(run, result.params);
  }
  // Accumulating onto stored zeros (fenced for the product) gives the same.
  WgmmaRun accumulating{WgmmaKind::BF16_K16, 64, false, true};
  accumulating.zeroAccumulators = true;
  WgmmaResult accumulated = runWgmma(accumulating);
  REQUIRE(accumulated.stats);
  checkProduct(accumulating, accumulated.params);
  WgmmaRun two{WgmmaKind::BF16_K16, 16};
  two.warpgroups = 2;
  WgmmaResult result = runWgmma(two);
  REQUIRE(result.stats);
  CHECK(result.stats->mmas == 2);
  checkProduct(two, result.params);
}

TEST_CASE("sim wgmma: misuse is reported", "[sim][wgmma]") {
  auto error = [](const WgmmaRun &run) {
    WgmmaResult result = runWgmma(run);
    REQUIRE_FALSE(result.stats);
    return result.stats.error().str();
  };
  using Catch::Matchers::Contains;
  WgmmaRun noWait;
  noWait.wait = false;
  CHECK_THAT(error(noWait), Contains("never waited for"));
  WgmmaRun partial;
  partial.partial = true;
  CHECK_THAT(error(partial), Contains("threads of warpgroup 0"));
  WgmmaRun divergent;
  divergent.divergentStart = true;
  CHECK_THAT(error(divergent), Contains("names operands other than thread"));
  // Accumulators read before the wait: never written (accumulate=false wrote nothing yet).
  WgmmaRun early;
  early.readEarly = true;
  CHECK_THAT(error(early), Contains("which no thread has written"));
  // An operand written while the product may still read it (before the wait).
  WgmmaRun overwrite;
  overwrite.writeOperand = true;
  CHECK_THAT(error(overwrite), Contains("while a wgmma reading it is in flight"));
  // Tile stores not fenced for the async proxy, accumulator stores not fenced for the product.
  WgmmaRun unfencedTiles;
  unfencedTiles.sharedFence = false;
  CHECK_THAT(error(unfencedTiles), Contains("with no wgmma_shared_fence"));
  WgmmaRun unfencedAccumulators;
  unfencedAccumulators.zeroAccumulators = true;
  unfencedAccumulators.fence = false;
  CHECK_THAT(error(unfencedAccumulators), Contains("stored to with no wgmma_fence after it"));
  // An MN-major operand of a product that cannot transpose (e4m3) is malformed.
  std::optional<std::string> problem = wgmmaProblem(
      WgmmaKind::E4M3_K32, 16, {makeBuffer("acc", DType::F32, 8, MemScope::Register), 0},
      {makeBuffer("t", DType::F8E4M3, 4096, MemScope::Shared), index(0), true, 1024, 1024},
      {makeBuffer("u", DType::F8E4M3, 4096, MemScope::Shared), index(0), false, 16, 1024});
  REQUIRE(problem);
  CHECK_THAT(*problem, Contains("only 16-bit products allow"));
}
