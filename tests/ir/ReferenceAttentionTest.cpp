// Reference interpreter: scaled_dot_product_attention by hand, with the
// causal mask aligned to the last key, and against a manual
// softmax(q k^T * scale) v on random data with broadcast batch dims.
#include "ir/ReferenceTestUtil.h"

#include <cmath>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::test;

namespace {
// With scores [1, 0]: weights [e/(e+1), 1/(e+1)], so 10 and 20 average to this.
const double kMixed = 12.689414213699951;

/// Attention for one batch element, the slow obvious way: every visible
/// score, then exp(s - max) / sum, then the weighted sum of v rows.
std::vector<double> manualAttention(const std::vector<double> &q, const std::vector<double> &k,
                                    const std::vector<double> &v, int64_t lq, int64_t lk, int64_t d,
                                    int64_t dv, double scale, bool causal) {
  std::vector<double> out(static_cast<size_t>(lq * dv), 0.0);
  for (int64_t i = 0; i < lq; ++i) {
    std::vector<double> weights(static_cast<size_t>(lk), 0.0);
    double max = -INFINITY, sum = 0;
    for (int64_t j = 0; j < lk; ++j) {
      if (causal && j > i + (lk - lq))
        continue;
      double s = 0;
      for (int64_t t = 0; t < d; ++t)
        s += q[i * d + t] * k[j * d + t];
      weights[j] = s * scale;
      max = std::max(max, weights[j]);
    }
    for (int64_t j = 0; j < lk; ++j) {
      if (causal && j > i + (lk - lq)) {
        weights[j] = 0;
        continue;
      }
      weights[j] = std::exp(weights[j] - max);
      sum += weights[j];
    }
    for (int64_t j = 0; j < lk; ++j)
      for (int64_t e = 0; e < dv; ++e)
        out[i * dv + e] += weights[j] / sum * v[j * dv + e];
  }
  return out;
}

std::vector<double> slice(const HostTensor &t, int64_t begin, int64_t count) {
  std::vector<double> values;
  for (int64_t i = 0; i < count; ++i)
    values.push_back(t.getDouble(begin + i));
  return values;
}
} // namespace

TEST_CASE("attention by hand, with and without the causal mask",
          "[reference][op:scaled_dot_product_attention]") {
  HostTensor k = f64({2, 2}, {1, 0, 0, 1});
  HostTensor v = f64({2, 1}, {10, 20});
  checkClose(run(OpKind::ScaledDotProductAttention, {f64({1, 2}, {1, 0}), k, v}, {{"scale", 1.0}}),
             {1, 1}, {kMixed});
  // scale 0 makes every key equally likely.
  checkClose(run(OpKind::ScaledDotProductAttention, {f64({1, 2}, {1, 0}), k, v}, {{"scale", 0.0}}),
             {1, 1}, {15});
  // Lq = Lk = 2, causal: query 0 sees only key 0.
  HostTensor q = f64({2, 2}, {1, 0, 1, 0});
  checkClose(run(OpKind::ScaledDotProductAttention, {q, k, v}, {{"scale", 1.0}, {"causal", true}}),
             {2, 1}, {10, kMixed});
  // Lq = 1 < Lk = 2: the single query is the last one and sees both keys.
  checkClose(run(OpKind::ScaledDotProductAttention, {f64({1, 2}, {1, 0}), k, v},
                 {{"scale", 1.0}, {"causal", true}}),
             {1, 1}, {kMixed});
}

TEST_CASE("causal attention with Lq > Lk is rejected rather than giving NaN rows",
          "[reference][op:scaled_dot_product_attention]") {
  // The mask keeps j <= i + (Lk - Lq) = i - 1, so query 0 would see nothing.
  Graph graph;
  Value *q = *graph.addInput("q", TensorType{DType::F64, {2, 2}});
  Value *k = *graph.addInput("k", TensorType{DType::F64, {1, 2}});
  Value *v = *graph.addInput("v", TensorType{DType::F64, {1, 1}});
  auto node = graph.addNode(OpKind::ScaledDotProductAttention, {q, k, v},
                            {{"scale", 1.0}, {"causal", true}});
  REQUIRE_FALSE(node);
  CHECK_THAT(node.error().message(), Catch::Contains("Lq = 2 > Lk = 1"));
}

TEST_CASE("causal attention with broadcast batch dims matches manual softmax",
          "[reference][op:scaled_dot_product_attention]") {
  Rng rng(21);
  const int64_t lq = 3, lk = 5, d = 4, dv = 3;
  // q [2, 3, Lq, D] broadcasts against k [3, Lk, D] and v [1, 1, Lk, Dv].
  HostTensor q = HostTensor::randomNormal(DType::F64, {2, 3, lq, d}, rng);
  HostTensor k = HostTensor::randomNormal(DType::F64, {3, lk, d}, rng);
  HostTensor v = HostTensor::randomNormal(DType::F64, {1, 1, lk, dv}, rng);
  double scale = 0.5;
  for (bool causal : {false, true}) {
    std::vector<double> expected;
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t b = 0; b < 3; ++b) {
        std::vector<double> one =
            manualAttention(slice(q, (a * 3 + b) * lq * d, lq * d), slice(k, b * lk * d, lk * d),
                            slice(v, 0, lk * dv), lq, lk, d, dv, scale, causal);
        expected.insert(expected.end(), one.begin(), one.end());
      }
    INFO("causal " << causal);
    checkClose(
        run(OpKind::ScaledDotProductAttention, {q, k, v}, {{"scale", scale}, {"causal", causal}}),
        {2, 3, lq, dv}, expected);
  }
}
