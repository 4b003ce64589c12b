// Reference interpreter: softmax and log_softmax (any axis, large inputs),
// layer_norm over trailing axes and batch_norm per channel, against
// hand-computed values and direct loops.
#include "ir/ReferenceTestUtil.h"

#include <cmath>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::test;

TEST_CASE("softmax along the last axis and along axis 0", "[reference][op:softmax]") {
  checkClose(run(OpKind::Softmax, {f64({3}, {1, 2, 3})}), {3},
             {0.09003057317038046, 0.24472847105479767, 0.6652409557748219});
  // [[0,1],[0,3]] along axis 0: column 0 is uniform, column 1 is sigmoid(-2), sigmoid(2).
  checkClose(run(OpKind::Softmax, {f64({2, 2}, {0, 1, 0, 3})}, {{"axis", int64_t{0}}}), {2, 2},
             {0.5, 0.11920292202211755, 0.5, 0.8807970779778823});
  checkClose(run(OpKind::Softmax, {f64({2, 2}, {0, 1, 0, 3})}, {{"axis", int64_t{-2}}}), {2, 2},
             {0.5, 0.11920292202211755, 0.5, 0.8807970779778823});
}

TEST_CASE("softmax subtracts the max, so large inputs do not overflow", "[reference][op:softmax]") {
  checkClose(run(OpKind::Softmax, {f32({2, 2}, {1000, 1000, -1000, -999})}), {2, 2},
             {0.5, 0.5, 0.2689414213699951, 0.7310585786300049}, 1e-7, 0);
}

TEST_CASE("softmax over a middle axis of [2,3,2]", "[reference][op:softmax]") {
  Rng rng(13);
  HostTensor x = HostTensor::randomNormal(DType::F64, {2, 3, 2}, rng);
  std::vector<double> expected(12);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 2; ++k) {
      double sum = 0;
      for (int j = 0; j < 3; ++j)
        sum += std::exp(x.getDouble((i * 3 + j) * 2 + k));
      for (int j = 0; j < 3; ++j)
        expected[(i * 3 + j) * 2 + k] = std::exp(x.getDouble((i * 3 + j) * 2 + k)) / sum;
    }
  checkClose(run(OpKind::Softmax, {x}, {{"axis", int64_t{1}}}), {2, 3, 2}, expected);
}

TEST_CASE("log_softmax", "[reference][op:log_softmax]") {
  checkClose(run(OpKind::LogSoftmax, {f64({3}, {1, 2, 3})}), {3},
             {-2.40760596444438, -1.4076059644443801, -0.40760596444438013});
  // Far from 0 the direct form keeps full precision: log(sigmoid(-2000)) = -2000.
  checkClose(run(OpKind::LogSoftmax, {f64({1, 2}, {0, 2000})}), {1, 2}, {-2000, 0});
}

TEST_CASE("layer_norm over the last axis by hand", "[reference][op:layer_norm]") {
  // Row [1,3]: mean 2, variance 1, so (x - 2) / sqrt(1.25). Row [2,2] has no
  // spread and normalizes to 0, leaving the bias.
  checkClose(run(OpKind::LayerNorm,
                 {f64({2, 2}, {1, 3, 2, 2}), f64({2}, {2, 3}), f64({2}, {0.5, -1})},
                 {{"epsilon", 0.25}}),
             {2, 2}, {-1.2888543819998317, 1.6832815729997477, 0.5, -1});
}

TEST_CASE("layer_norm over the last two axes (axis -2)", "[reference][op:layer_norm]") {
  Rng rng(17);
  HostTensor x = HostTensor::randomNormal(DType::F64, {3, 2, 5}, rng);
  HostTensor scale = HostTensor::randomUniform(DType::F64, {2, 5}, rng);
  HostTensor bias = HostTensor::randomUniform(DType::F64, {2, 5}, rng);
  std::vector<double> expected;
  for (int row = 0; row < 3; ++row) {
    double mean = 0, variance = 0;
    for (int i = 0; i < 10; ++i)
      mean += x.getDouble(row * 10 + i) / 10;
    for (int i = 0; i < 10; ++i)
      variance += std::pow(x.getDouble(row * 10 + i) - mean, 2) / 10;
    for (int i = 0; i < 10; ++i)
      expected.push_back((x.getDouble(row * 10 + i) - mean) / std::sqrt(variance + 1e-5) *
                             scale.getDouble(i) +
                         bias.getDouble(i));
  }
  checkClose(run(OpKind::LayerNorm, {x, scale, bias}, {{"axis", int64_t{-2}}}), {3, 2, 5},
             expected);
}

TEST_CASE("batch_norm per channel on axis 1 and on the last axis", "[reference][op:batch_norm]") {
  // x [1,2,2]: channel 0 = [1,3], channel 1 = [10,20].
  HostTensor x = f32({1, 2, 2}, {1, 3, 10, 20});
  HostTensor scale = f32({2}, {2, 1}), bias = f32({2}, {0, 1});
  HostTensor mean = f32({2}, {2, 10}), variance = f32({2}, {4, 100});
  checkExact(run(OpKind::BatchNorm, {x, scale, bias, mean, variance}, {{"epsilon", 0.0}}),
             DType::F32, {1, 2, 2}, {-1, 1, 1, 2});
  // Channels last ([2, 2] with axis -1): rows are (c0, c1) pairs.
  HostTensor rows = f32({2, 2}, {1, 10, 3, 20});
  checkExact(run(OpKind::BatchNorm, {rows, scale, bias, mean, variance},
                 {{"epsilon", 0.0}, {"axis", int64_t{-1}}}),
             DType::F32, {2, 2}, {-1, 1, 1, 2});
  // The default epsilon 1e-5 is added to the variance.
  checkClose(run(OpKind::BatchNorm, {x, scale, bias, mean, variance}), {1, 2, 2},
             {-2 / std::sqrt(4 + 1e-5), 2 / std::sqrt(4 + 1e-5), 1, 1 + 10 / std::sqrt(100 + 1e-5)},
             1e-7, 0);
}
