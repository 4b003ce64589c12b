// Reference interpreter on the composite elementwise ops (relu6, hard_sigmoid, hard_swish,
// softplus, mish, leaky_relu, elu), which it evaluates through their decompositions: each
// against hand-computed values at the edges (negative, zero, large, infinite, NaN).
// Expectations are the fp64 values of the textbook formulas; the decompositions compute them
// another way (log(1 + exp(-|y|)) for softplus), hence 1e-12 relative plus a tiny absolute
// margin where a result is close to 0.
#include "ir/ReferenceTestUtil.h"

#include <cmath>
#include <limits>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::test;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

void checkNear(const HostTensor &actual, std::vector<double> expected) {
  checkClose(actual, {static_cast<int64_t>(expected.size())}, expected, 1e-12, 1e-15);
}

/// The single element of a one-element result, for the NaN and infinity cases.
double only(const HostTensor &actual) {
  REQUIRE(actual.numElements() == 1);
  return actual.getDouble(0);
}
} // namespace

TEST_CASE("relu6 clamps to [0, 6], on integers too", "[reference][op:relu6]") {
  checkExact(run(OpKind::Relu6, {f32({7}, {-3, 0, 2.5, 6, 100, -kInf, kInf})}), DType::F32, {7},
             {0, 0, 2.5, 6, 6, 0, 6});
  CHECK(std::isnan(only(run(OpKind::Relu6, {f32({1}, {kNaN})}))));
  checkExact(run(OpKind::Relu6, {tensor(DType::I32, {3}, {-7, 3, 9})}), DType::I32, {3},
             {0, 3, 6});
}

TEST_CASE("hard_sigmoid is clamp(alpha * x + beta, 0, 1) with ONNX's defaults",
          "[reference][op:hard_sigmoid]") {
  // alpha 0.2, beta 0.5: the ramp runs from -2.5 to 2.5.
  checkNear(run(OpKind::HardSigmoid, {f64({7}, {-1e30, -3, -2.5, 0, 1, 2.5, 10})}),
            {0, 0, 0, 0.5, 0.7, 1, 1});
  // PyTorch's: relu6(x + 3) / 6.
  checkNear(run(OpKind::HardSigmoid, {f64({5}, {-4, -3, 0, 1.5, 3})},
                {{"alpha", 1.0 / 6.0}, {"beta", 0.5}}),
            {0, 0, 0.5, 0.75, 1});
  CHECK(std::isnan(only(run(OpKind::HardSigmoid, {f64({1}, {kNaN})}))));
}

TEST_CASE("hard_swish is x * relu6(x + 3) / 6", "[reference][op:hard_swish]") {
  checkNear(run(OpKind::HardSwish, {f64({8}, {-1e6, -4, -3, -1.5, 0, 1.5, 3, 5})}),
            {0, 0, 0, -0.375, 0, 1.125, 3, 5});
  CHECK(only(run(OpKind::HardSwish, {f64({1}, {1e300})})) == 1e300);
  CHECK(std::isnan(only(run(OpKind::HardSwish, {f64({1}, {kNaN})}))));
}

TEST_CASE("softplus is log(1 + exp(beta x)) / beta, x above the threshold",
          "[reference][op:softplus]") {
  // Defaults beta 1, threshold 20: 20 itself is still on the smooth side, 21 is linear, and
  // 1000 does not overflow exp.
  checkNear(run(OpKind::Softplus, {f64({8}, {-1000, -30, -1, 0, 1, 20, 21, 1000})}),
            {0, 9.357622968839737e-14, 0.31326168751822286, 0.6931471805599453,
             1.3132616875182228, 20.000000002061153, 21, 1000});
  // beta 2, threshold 5: x = 3 gives beta * x = 6 > 5, so x itself.
  checkNear(run(OpKind::Softplus, {f64({3}, {1, 2.5, 3})}, {{"beta", 2.0}, {"threshold", 5.0}}),
            {1.0634640055214863, 2.503357674244559, 3});
  // ONNX's softplus has no threshold: the smooth form everywhere, still finite at 1000.
  checkNear(run(OpKind::Softplus, {f64({2}, {21, 1000})}, {{"threshold", kInf}}),
            {21.000000000758256, 1000});
  CHECK(std::isnan(only(run(OpKind::Softplus, {f64({1}, {kNaN})}))));
  CHECK(only(run(OpKind::Softplus, {f64({1}, {-kInf})})) == 0);
}

TEST_CASE("mish is x * tanh(softplus(x))", "[reference][op:mish]") {
  checkNear(run(OpKind::Mish, {f64({6}, {-1000, -1, 0, 1, 2.5, 30})}),
            {0, -0.30340146137410895, 0, 0.8650983882673103, 2.471392304557881, 30});
  CHECK(std::isnan(only(run(OpKind::Mish, {f64({1}, {kNaN})}))));
}

TEST_CASE("leaky_relu scales the negative side by alpha", "[reference][op:leaky_relu]") {
  checkExact(run(OpKind::LeakyRelu, {f64({5}, {-2, -1e300, 0, 3, kInf})}, {{"alpha", 0.25}}),
             DType::F64, {5}, {-0.5, -2.5e299, 0, 3, kInf});
  // The default slope is 0.01, and -inf stays -inf.
  checkExact(run(OpKind::LeakyRelu, {f64({2}, {-100, -kInf})}), DType::F64, {2}, {-1, -kInf});
  CHECK(std::isnan(only(run(OpKind::LeakyRelu, {f64({1}, {kNaN})}))));
}

TEST_CASE("elu is alpha * (exp(x) - 1) below zero", "[reference][op:elu]") {
  checkNear(run(OpKind::Elu, {f64({6}, {-kInf, -1000, -1, 0, 2, 1e300})}, {{"alpha", 0.5}}),
            {-0.5, -0.5, -0.31606027941427883, 0, 2, 1e300});
  // The default alpha is 1.
  checkNear(run(OpKind::Elu, {f64({1}, {-1})}), {-0.6321205588285577});
  CHECK(std::isnan(only(run(OpKind::Elu, {f64({1}, {kNaN})}))));
}

TEST_CASE("a composite op's reference rounds every step of its decomposition",
          "[reference][op:hard_sigmoid]") {
  // In f16, alpha 0.2 rounds to 0.199951171875 and the product rounds before beta is added:
  // x = 2.19921875 gives 0.939453125, where the exact value rounded once would be
  // 0.93994140625.
  std::vector<double> got =
      run(OpKind::HardSigmoid, {tensor(DType::F16, {1}, {2.19921875})}).toDoubles();
  CHECK(got.at(0) == 0.939453125);
}
