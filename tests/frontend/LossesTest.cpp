// The DSL's losses: hand-computed values, an fp64 oracle on random inputs,
// extreme logits, low-precision logits and the errors at the user's line.
#include "DslTestUtil.h"

#include "compiler/Compile.h"
#include "frontend/Ops.h"
#include "frontend/nn/Losses.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

using namespace kiln;
using namespace kiln::dsltest;

namespace {

/// The cross entropy against the smoothed one-hot target, in fp64, row by row.
double referenceCrossEntropy(const HostTensor &logits, const HostTensor &labels, double smoothing) {
  int64_t batch = logits.shape()[0], classes = logits.shape()[1];
  double total = 0;
  for (int64_t n = 0; n < batch; ++n) {
    double max = -INFINITY;
    for (int64_t c = 0; c < classes; ++c)
      max = std::max(max, logits.getDouble(n * classes + c));
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(logits.getDouble(n * classes + c) - max);
    double logSum = max + std::log(sum);
    for (int64_t c = 0; c < classes; ++c) {
      double target = smoothing / static_cast<double>(classes) +
                      (c == static_cast<int64_t>(labels.getDouble(n)) ? 1.0 - smoothing : 0.0);
      total -= target * (logits.getDouble(n * classes + c) - logSum);
    }
  }
  return total / static_cast<double>(batch);
}

HostTensor randomLabels(int64_t batch, int64_t classes, DType dtype, uint64_t seed) {
  Rng rng(seed);
  HostTensor labels(dtype, {batch});
  for (int64_t n = 0; n < batch; ++n)
    labels.setDouble(n, static_cast<double>(rng.nextU64() % static_cast<uint64_t>(classes)));
  return labels;
}

double crossEntropyOf(const HostTensor &logits, const HostTensor &labels, double smoothing) {
  Graph graph("ce");
  Tensor x = graph.input("logits", logits.shape(), logits.dtype());
  Tensor y = graph.input("labels", labels.shape(), labels.dtype());
  Tensor loss = nn::softmaxCrossEntropy(x, y, smoothing);
  REQUIRE(loss.ok());
  CHECK(loss.rank() == 0);
  CHECK(loss.dtype() == (logits.dtype() == DType::F64 ? DType::F64 : DType::F32));
  graph.output("loss", loss);
  return run(graph, {{"logits", logits}, {"labels", labels}}).at("loss").getDouble(0);
}

} // namespace

TEST_CASE("softmaxCrossEntropy matches a hand-computed value", "[losses]") {
  HostTensor logits =
      HostTensor::fromDoubles(DType::F32, {2, 3}, std::vector<double>{1, 2, 3, 1, 1, 1});
  HostTensor labels = HostTensor::fromDoubles(DType::I64, {2}, std::vector<double>{2, 0});
  // Row 0: log(e + e^2 + e^3) - 3 = 0.4076059644; row 1: log 3 = 1.0986122887.
  CHECK(crossEntropyOf(logits, labels, 0.0) == Approx(0.7531091265).epsilon(1e-6));
  // Smoothing 0.3 over 3 classes: row 0 adds 0.1 * (sum of -logp) - 0.3 * 0.4076;
  // row 1 is uniform, so its loss stays log 3.
  double row0 = 0.7 * 0.4076059644 + 0.1 * (2.4076059644 + 1.4076059644 + 0.4076059644);
  CHECK(crossEntropyOf(logits, labels, 0.3) ==
        Approx((row0 + 1.0986122887) / 2).epsilon(1e-6));
}

TEST_CASE("softmaxCrossEntropy matches fp64 on random logits of odd and round sizes",
          "[losses]") {
  // f32 logits; the interpreter rounds every op to f32, so 1e-5 relative.
  for (auto [batch, classes] : {std::pair<int64_t, int64_t>{7, 5}, {8, 16}, {1, 1}}) {
    for (double smoothing : {0.0, 0.1}) {
      for (DType labelType : {DType::I32, DType::I64}) {
        CAPTURE(batch, classes, smoothing, dtypeName(labelType));
        Rng rng(static_cast<uint64_t>(batch * 100 + classes));
        HostTensor logits = HostTensor::randomUniform(DType::F32, {batch, classes}, rng, -4, 4);
        HostTensor labels = randomLabels(batch, classes, labelType, rng.nextU64());
        CHECK(crossEntropyOf(logits, labels, smoothing) ==
              Approx(referenceCrossEntropy(logits, labels, smoothing)).epsilon(1e-5).margin(1e-6));
      }
    }
  }
}

TEST_CASE("softmaxCrossEntropy stays finite and exact for logits of 1e4", "[losses]") {
  HostTensor logits = HostTensor::fromDoubles(
      DType::F32, {3, 3}, std::vector<double>{1e4, -1e4, 0, -1e4, -1e4, 1e4, 5e3, 5e3, -1e4});
  HostTensor labels = HostTensor::fromDoubles(DType::I32, {3}, std::vector<double>{1, 2, 0});
  // Row 0: 2e4 (label far below the max); row 1: 0; row 2: log 2.
  double loss = crossEntropyOf(logits, labels, 0.0);
  REQUIRE(std::isfinite(loss));
  CHECK(loss == Approx((2e4 + 0 + std::log(2.0)) / 3).epsilon(1e-6));
  CHECK(std::isfinite(crossEntropyOf(logits, labels, 0.1)));
}

TEST_CASE("softmaxCrossEntropy computes low-precision logits in f32", "[losses]") {
  Rng rng(11);
  HostTensor logits = HostTensor::randomUniform(DType::BF16, {5, 7}, rng, -3, 3);
  HostTensor labels = randomLabels(5, 7, DType::I64, 12);
  // The bf16 values are exact in f32, so only f32 rounding remains.
  CHECK(crossEntropyOf(logits, labels, 0.0) ==
        Approx(referenceCrossEntropy(logits, labels, 0.0)).epsilon(1e-5));
}

TEST_CASE("meanSquaredError matches hand-computed and fp64 values", "[losses]") {
  Graph graph("mse");
  Tensor p = graph.input("p", {2, 3});
  Tensor t = graph.input("t", {2, 3});
  Tensor loss = nn::meanSquaredError(p, t);
  REQUIRE(loss.ok());
  CHECK(loss.rank() == 0);
  graph.output("loss", loss);
  HostTensor pv =
      HostTensor::fromDoubles(DType::F32, {2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});
  HostTensor tv =
      HostTensor::fromDoubles(DType::F32, {2, 3}, std::vector<double>{1, 0, 3, 1, 5, 7});
  // (0 + 4 + 0 + 9 + 0 + 1) / 6.
  CHECK(run(graph, {{"p", pv}, {"t", tv}}).at("loss").getDouble(0) == Approx(14.0 / 6));

  HostTensor pr = randomF32({5, 3}, 21), tr = randomF32({5, 3}, 22);
  Graph random("mse_random");
  random.output("loss", nn::meanSquaredError(random.input("p", {5, 3}), random.input("t", {5, 3})));
  double expected = 0;
  for (int64_t i = 0; i < 15; ++i)
    expected += std::pow(pr.getDouble(i) - tr.getDouble(i), 2) / 15;
  CHECK(run(random, {{"p", pr}, {"t", tr}}).at("loss").getDouble(0) ==
        Approx(expected).epsilon(1e-5));
}

namespace {

/// The graph's first error after `build` ran, checked to name `line` of this file.
template <typename Build> std::string lossErrorAt(int line, Build build) {
  Graph graph("bad");
  build(graph);
  std::string message = firstError(graph);
  CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
  return message;
}

} // namespace

TEST_CASE("losses report bad operands at the user's line", "[losses]") {
  // Each call sits on its own line (a macro would give every line its own).
  int line = __LINE__ + 2;
  auto wrongBatch = [](Graph &g) {
    nn::softmaxCrossEntropy(g.input("x", {4, 3}), g.input("y", {5}, DType::I64));
  };
  CHECK_THAT(lossErrorAt(line, wrongBatch),
             Catch::Contains("labels must be [4]") && Catch::Contains("i64[5]"));

  line = __LINE__ + 2;
  auto floatLabels = [](Graph &g) {
    nn::softmaxCrossEntropy(g.input("x", {4, 3}), g.input("y", {4}, DType::F32));
  };
  CHECK_THAT(lossErrorAt(line, floatLabels), Catch::Contains("labels must be i32 or i64"));

  line = __LINE__ + 2;
  auto rank3 = [](Graph &g) {
    nn::softmaxCrossEntropy(g.input("x", {4, 3, 2}), g.input("y", {4}, DType::I32));
  };
  CHECK_THAT(lossErrorAt(line, rank3),
             Catch::Contains("logits must be a float [N, C] tensor, got f32[4,3,2]"));

  line = __LINE__ + 2;
  auto badSmoothing = [](Graph &g) {
    nn::softmaxCrossEntropy(g.input("x", {4, 3}), g.input("y", {4}, DType::I32), 1.5);
  };
  CHECK_THAT(lossErrorAt(line, badSmoothing), Catch::Contains("labelSmoothing must be in [0, 1]"));

  line = __LINE__ + 2;
  auto shapes = [](Graph &g) {
    nn::meanSquaredError(g.input("p", {4, 1}), g.input("t", {4}));
  };
  CHECK_THAT(lossErrorAt(line, shapes),
             Catch::Contains("meanSquaredError") && Catch::Contains("same shape"));

  line = __LINE__ + 2;
  auto dtypes = [](Graph &g) {
    nn::meanSquaredError(g.input("p", {4}), g.input("t", {4}, DType::F16));
  };
  CHECK_THAT(lossErrorAt(line, dtypes), Catch::Contains("same float dtype"));
}

TEST_CASE("softmaxCrossEntropy compiles to few kernels and stays finite on the CPU",
          "[losses]") {
  Graph graph("ce_compiled");
  Tensor logits = graph.input("logits", {5, 9});
  Tensor labels = graph.input("labels", {5}, DType::I64);
  graph.output("loss", nn::softmaxCrossEntropy(logits, labels, 0.1));
  REQUIRE(graph.finalize());
  CompileOptions options;
  options.target = TargetKind::Cpu;
  auto model = compile(graph.ir(), options);
  REQUIRE(model);
  // log_softmax's row kernel and the reduction of weights * log-probabilities.
  CHECK(model->numKernels() <= 3);
  Rng rng(31);
  HostTensor x = HostTensor::randomUniform(DType::F32, {5, 9}, rng, -1e4, 1e4);
  HostTensor y = randomLabels(5, 9, DType::I64, 32);
  auto outputs = model->run({{"logits", x}, {"labels", y}});
  REQUIRE(outputs);
  double loss = outputs->at("loss").getDouble(0);
  REQUIRE(std::isfinite(loss));
  CHECK(loss == Approx(referenceCrossEntropy(x, y, 0.1)).epsilon(1e-5));
}
