// compareTensors' scale: the largest finite |expected|, at least minScale (1
// for the per-dtype tolerances; tiny to judge a tensor by its own magnitude).
#include "support/Tolerance.h"

#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <vector>

using namespace kiln;

namespace {

HostTensor tensor(std::vector<double> values) {
  return HostTensor::fromDoubles(DType::F64, {static_cast<int64_t>(values.size())}, values);
}

} // namespace

TEST_CASE("compareTensors judges the abs term against the tensor's scale", "[support][tolerance]") {
  HostTensor expected = tensor({0.01, -0.02, 0.005});
  HostTensor actual = tensor({0.0101, -0.0202, 0.005});
  // The default floor of 1: small values are judged absolutely, so 2e-4 passes 1e-3.
  Comparison floored = compareTensors(actual, expected, Tolerance{.rel = 0, .abs = 1e-3});
  CHECK(floored.ok);
  CHECK(floored.scale == 1.0);
  // Against the tensor's own scale (0.02) the same error is 1% of it.
  Comparison own = compareTensors(actual, expected,
                                  Tolerance{.rel = 0, .abs = 1e-3, .minScale = DBL_MIN});
  CHECK(own.scale == 0.02);
  CHECK(!own.ok);
  CHECK(own.mismatches == 2);
  CHECK(own.maxAbsError == Approx(2e-4));
  CHECK(compareTensors(actual, expected, Tolerance{.rel = 0, .abs = 0.011, .minScale = DBL_MIN})
            .ok);
  // Infinities and NaN do not set the scale.
  HostTensor special = tensor({INFINITY, 0.5, NAN});
  CHECK(compareTensors(special, special, Tolerance{.rel = 0, .abs = 0, .minScale = DBL_MIN})
            .scale == 0.5);
}

TEST_CASE("compareTensors names the rows and columns its mismatches lie in", "[support][tolerance]") {
  // A 3 x 10 x 40 tensor (rows flatten the first two dims: 30 of them) wrong in one 8 x 16 tile.
  std::vector<double> values(1200, 1.0);
  HostTensor expected = HostTensor::fromDoubles(DType::F64, {3, 10, 40}, values);
  for (int64_t row = 16; row < 24; ++row)
    for (int64_t col = 16; col < 32; ++col)
      values[size_t(row * 40 + col)] = 2.0;
  HostTensor actual = HostTensor::fromDoubles(DType::F64, {3, 10, 40}, values);
  Comparison tile = compareTensors(actual, expected, toleranceFor(DType::F64));
  CHECK(tile.mismatches == 128);
  CHECK(tile.mismatchPattern == "rows 16..23 (8 of 30), columns 16..31 (16 of 40)");
  // Every other column of one row, past five ranges; a single wrong column in every row.
  std::vector<double> strided(1200, 1.0), column(1200, 1.0);
  for (int64_t col = 0; col < 40; col += 2)
    strided[size_t(5 * 40 + col)] = 0.0;
  for (int64_t row = 0; row < 30; ++row)
    column[size_t(row * 40 + 7)] = 0.0;
  CHECK(compareTensors(HostTensor::fromDoubles(DType::F64, {3, 10, 40}, strided), expected,
                       toleranceFor(DType::F64))
            .mismatchPattern == "rows 5 (1 of 30), columns 0, 2, 4, 6, 8, ... (20 ranges) (20 of 40)");
  CHECK(compareTensors(HostTensor::fromDoubles(DType::F64, {3, 10, 40}, column), expected,
                       toleranceFor(DType::F64))
            .mismatchPattern == "rows 0..29 (all 30), columns 7 (1 of 40)");
  // Vectors and matching tensors have none.
  CHECK(compareTensors(tensor({1, 2}), tensor({1, 3}), toleranceFor(DType::F64)).mismatchPattern.empty());
  CHECK(compareTensors(expected, expected, toleranceFor(DType::F64)).mismatchPattern.empty());
}
