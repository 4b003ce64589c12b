// The operand-read probe (tests/ProductProbe.h) that a failing GPU product test prints: on
// host products with known faults (a row-dependent k swizzle, a k order both operands share,
// unwritten elements), then on the simulator's wgmma and producer/consumer kernels, right and
// with their shared tiles or accumulators deliberately misplaced. Each fault must come back
// as exactly the reads it causes and the verdict that names it.
#include "SimTestUtil.h"

#include "ir/kernel/WgmmaLayout.h"
#include "runtime/sim/Simulator.h"
#include "tests/ProductProbe.h"
#include "tests/codegen/gpu/TensorCoreKernels.h"
#include "tests/codegen/gpu/TmaKernels.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace kiln;
using Catch::Matchers::Contains;
using testing::ProbedProduct;
using testing::ProductReads;

namespace {

/// D = A B^T on the host, B's element (j, p) taken from (j, bK(j, p)).
testing::ProductRun hostProduct(const ProbedProduct &s,
                                std::function<int64_t(int64_t j, int64_t p)> bK) {
  return [s, bK](const std::vector<double> &a, const std::vector<double> &b) {
    std::vector<double> d(size_t(s.rows * s.n), 0.0);
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j)
        for (int64_t p = 0; p < s.k; ++p)
          d[size_t(i * s.n + j)] += a[size_t(i * s.k + p)] * b[size_t(j * s.k + bK(j, p))];
    return d;
  };
}

HostTensor indexTensor(const std::vector<int64_t> &values) {
  HostTensor t(DType::I64, {int64_t(values.size())});
  std::ranges::copy(values, t.as<int64_t>().begin());
  return t;
}

/// Runs a product kernel on the simulator: A and B (in `dtype`) as its first two parameters,
/// D (f32, poisoned with NaN, 64 rows of `n`) as its third, `rest` after them; returns D.
std::vector<double> simulateProduct(const kir::Kernel &kernel, DType dtype,
                                    const std::vector<double> &a, const std::vector<double> &b,
                                    int64_t n, std::vector<HostTensor> rest = {}) {
  std::vector<HostTensor> params;
  for (const std::vector<double> *values : {&a, &b}) {
    HostTensor t(dtype, {int64_t(values->size())});
    for (size_t e = 0; e < values->size(); ++e)
      t.setDouble(int64_t(e), (*values)[e]);
    params.push_back(std::move(t));
  }
  HostTensor d(DType::F32, {int64_t(kir::kWgmmaM) * n});
  for (int64_t e = 0; e < d.numElements(); ++e)
    d.setDouble(e, std::nan(""));
  params.push_back(std::move(d));
  for (HostTensor &t : rest)
    params.push_back(std::move(t));
  auto stats = sim::simulateKernel(kernel, params);
  INFO((stats ? std::string() : stats.error().str()));
  REQUIRE(stats);
  std::vector<double> out(size_t(params[2].numElements()));
  for (size_t e = 0; e < out.size(); ++e)
    out[e] = params[2].getDouble(int64_t(e));
  return out;
}

/// The wgmma test kernel on the simulator with the given shared-tile and accumulator tables
/// (the right ones place every element where the descriptors and the ISA's layout say).
struct WgmmaOnSim {
  testing::WgmmaKernelSpec spec;
  std::vector<int64_t> aIndex, bIndex, dIndex;

  explicit WgmmaOnSim(testing::WgmmaKernelSpec s)
      : spec(s), aIndex(testing::wgmmaTileIndices(s.kind, s.aMnMajor, kir::kWgmmaM)),
        bIndex(testing::wgmmaTileIndices(s.kind, s.bMnMajor, s.n)),
        dIndex(testing::wgmmaAccumulatorIndices(s.n)) {}

  ProbedProduct shape() const {
    return {kir::kWgmmaM, spec.n, kir::wgmmaShapeInfo(spec.kind).k, kir::kWgmmaM};
  }

  testing::ProductRun run() const {
    return [this](const std::vector<double> &a, const std::vector<double> &b) {
      std::vector<HostTensor> tables;
      for (const std::vector<int64_t> *table : {&aIndex, &bIndex, &dIndex})
        tables.push_back(indexTensor(*table));
      return simulateProduct(testing::wgmmaKernel(spec),
                             kir::wgmmaShapeInfo(spec.kind).operandDtype, a, b, spec.n,
                             std::move(tables));
    };
  }
};

/// Every observation of `reads` read what `expect(wanted)` says (a flat operand index).
void checkReads(const std::vector<testing::ProbeRead> &reads,
                const std::function<int64_t(int64_t)> &expect) {
  int64_t checked = 0, wrong = 0;
  for (const testing::ProbeRead &r : reads) {
    if (r.wanted < 0)
      continue;
    ++checked;
    if (r.got != expect(r.wanted) && ++wrong <= 4)
      FAIL_CHECK("D[" << r.row << "][" << r.col << "] read " << r.got << " for " << r.wanted
                      << ", expected " << expect(r.wanted));
  }
  CHECK(checked > 0);
  CHECK(wrong == 0);
}

} // namespace

TEST_CASE("product probe: host products with known faults", "[sim][probe]") {
  const ProbedProduct shape{24, 40, 32, 24};
  SECTION("a right product") {
    ProductReads reads = testing::probeProductReads(shape, hostProduct(shape, [](int64_t, int64_t p) {
      return p;
    }));
    CHECK(ProductReads::wrong(reads.a) == 0);
    CHECK(ProductReads::wrong(reads.b) == 0);
    // One run per shift of the diagonal and code digit: B's 1280 codes and A's 768 take 3
    // digits; B's 24-row diagonal needs 2 shifts over k = 32, A's 40-column one 1.
    CHECK(reads.runs == 2 * 3 + 1 * 3);
    CHECK(reads.b.size() == size_t(24 * 40 * 2));
    CHECK_THAT(testing::productVerdict(reads), Contains("every probed read is right"));
  }
  SECTION("B's k halves swapped in odd rows: a row-dependent misreading of B") {
    auto swizzled = [](int64_t j, int64_t p) { return (j & 1) ? p ^ 16 : p; };
    ProductReads reads = testing::probeProductReads(shape, hostProduct(shape, swizzled));
    checkReads(reads.b, [&](int64_t e) { return e / 32 * 32 + swizzled(e / 32, e % 32); });
    CHECK_THAT(testing::productVerdict(reads), Contains("B is misread along k"));
    std::string report = testing::describeProductReads(reads);
    CHECK_THAT(report, Contains("row +0, k +16"));
    CHECK_THAT(report, Contains("row +0, k -16"));
  }
  SECTION("the same k order misread in every row: the outputs cannot name the operand") {
    ProductReads reads = testing::probeProductReads(shape, hostProduct(shape, [](int64_t, int64_t p) {
      return (p + 1) % 32;
    }));
    checkReads(reads.b, [](int64_t e) { return e / 32 * 32 + (e % 32 + 1) % 32; });
    CHECK_THAT(testing::productVerdict(reads), Contains("disagree on the order of k"));
  }
  SECTION("elements of D never written") {
    testing::ProductRun right = hostProduct(shape, [](int64_t, int64_t p) { return p; });
    ProductReads reads = testing::probeProductReads(
        shape, [&](const std::vector<double> &a, const std::vector<double> &b) {
          std::vector<double> d = right(a, b);
          d[5] = std::nan(""); // D[0][5]
          return d;
        });
    CHECK(ProductReads::wrong(reads.a) == 1); // the A probe has one shift: D[0][5] once
    CHECK(ProductReads::wrong(reads.b) == 2);     // two shifts of the B probe
    CHECK_THAT(testing::describeProductReads(reads), Contains("D[0][5] read NaN (never written)"));
    CHECK_THAT(testing::productVerdict(reads), Contains("never written"));
  }
}

TEST_CASE("product probe: the simulator's wgmma, right and misplaced", "[sim][probe][wgmma]") {
  using kir::WgmmaKind;
  SECTION("right in every orientation") {
    for (testing::WgmmaKernelSpec spec :
         {testing::WgmmaKernelSpec{WgmmaKind::BF16_K16, 64, false, false},
          testing::WgmmaKernelSpec{WgmmaKind::BF16_K16, 128, true, true},
          testing::WgmmaKernelSpec{WgmmaKind::E4M3_K32, 24, false, false}}) {
      WgmmaOnSim kernel(spec);
      INFO(testing::wgmmaKernel(spec).name);
      ProductReads reads = testing::probeProductReads(kernel.shape(), kernel.run());
      CHECK(ProductReads::wrong(reads.a) == 0);
      CHECK(ProductReads::wrong(reads.b) == 0);
      CHECK_THAT(testing::productVerdict(reads), Contains("every probed read is right"));
    }
  }
  const int k = 16;
  SECTION("B's k halves swapped in odd rows of its MN-major tile") {
    WgmmaOnSim kernel({WgmmaKind::BF16_K16, 64, false, true});
    std::vector<int64_t> right = kernel.bIndex;
    auto swizzled = [](int64_t j, int64_t p) { return (j & 1) ? p ^ 8 : p; };
    for (int64_t j = 0; j < 64; ++j)
      for (int64_t p = 0; p < k; ++p)
        kernel.bIndex[size_t(j * k + p)] = right[size_t(j * k + swizzled(j, p))];
    ProductReads reads = testing::probeProductReads(kernel.shape(), kernel.run());
    // The product reads the place of (j, p), where (j, swizzled(j, p)) now lies.
    checkReads(reads.b, [&](int64_t e) { return e / k * k + swizzled(e / k, e % k); });
    CHECK_THAT(testing::productVerdict(reads), Contains("B is misread along k"));
    std::string report = testing::describeProductReads(
        reads, [&](char operand, int64_t e) {
          return fmt::format("byte {}", 2 * (operand == 'B' ? right : kernel.aIndex)[size_t(e)]);
        });
    CHECK_THAT(report, Contains("against byte"));
  }
  SECTION("rows of A swapped in pairs") {
    WgmmaOnSim kernel({WgmmaKind::BF16_K16, 64, false, false});
    std::vector<int64_t> right = kernel.aIndex;
    for (int64_t i = 0; i < kir::kWgmmaM; ++i)
      for (int64_t p = 0; p < k; ++p)
        kernel.aIndex[size_t(i * k + p)] = right[size_t((i ^ 1) * k + p)];
    ProductReads reads = testing::probeProductReads(kernel.shape(), kernel.run());
    checkReads(reads.a, [&](int64_t e) { return (e / k ^ 1) * k + e % k; });
    CHECK_THAT(testing::productVerdict(reads), Contains("A is misread: rows of A move"));
  }
  SECTION("accumulators stored 8 rows and a column away") {
    WgmmaOnSim kernel({WgmmaKind::BF16_K16, 64, false, false});
    const int64_t n = 64;
    for (int64_t &at : kernel.dIndex)
      at = (at / n ^ 8) * n + (at % n ^ 1);
    ProductReads reads = testing::probeProductReads(kernel.shape(), kernel.run());
    CHECK_THAT(testing::productVerdict(reads), Contains("accumulators stored in the wrong place"));
    std::vector<std::array<int64_t, 4>> moved = testing::movedAccumulators(reads);
    CHECK(moved.size() == size_t(k * k)); // the elements both first-shift probes can place
    for (const auto &[i, j, i2, j2] : moved) {
      INFO("D[" << i << "][" << j << "] holds (" << i2 << ", " << j2 << ")");
      CHECK((i2 == (i ^ 8) && j2 == (j ^ 1)));
    }
  }
}

TEST_CASE("product probe: the simulator's producer/consumer kernel reads right",
          "[sim][probe][tma]") {
  testing::TmaKernelSpec spec;
  spec.n = 64;
  spec.kTiles = 2;
  spec.m = 37; // A's box hangs over the edge: D rows 37..63 must read nothing
  kir::Kernel kernel = testing::tmaPipelineKernel(spec);
  const ProbedProduct shape{spec.m, spec.n, 64 * spec.kTiles, kir::kWgmmaM};
  ProductReads reads = testing::probeProductReads(
      shape, [&](const std::vector<double> &a, const std::vector<double> &b) {
        return simulateProduct(kernel, DType::BF16, a, b, spec.n);
      });
  CHECK(ProductReads::wrong(reads.a) == 0);
  CHECK(ProductReads::wrong(reads.b) == 0);
  // B's probe: 4 shifts of a 37-row diagonal over k = 128, each D row past 37 reading nothing.
  CHECK(reads.b.size() == size_t(64 * 64 * 4));
  CHECK_THAT(testing::productVerdict(reads), Contains("every probed read is right"));
}
