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
