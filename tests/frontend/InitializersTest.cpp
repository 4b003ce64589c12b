// Parameter initializers: Glorot uniform bounds, He normal statistics, fans,
// and reproducibility from the graph seed and the parameter's name.
#include "frontend/DslTestUtil.h"
#include "frontend/nn/Layers.h"

#include <algorithm>
#include <cmath>

using namespace kiln;
using namespace kiln::dsltest;
using namespace kiln::nn;

TEST_CASE("fans of dense kernels and conv filters", "[nn][init]") {
  CHECK(denseFans(784, 64).in == 784);
  CHECK(denseFans(784, 64).out == 64);
  Fans nchw = convFans({32, 3, 5, 4}, Layout::NCHW);
  CHECK(nchw.in == 3 * 20);
  CHECK(nchw.out == 32 * 20);
  Fans nhwc = convFans({32, 5, 4, 3}, Layout::NHWC);
  CHECK(nhwc.in == 3 * 20);
  CHECK(nhwc.out == 32 * 20);
}

TEST_CASE("glorotUniform stays within +-sqrt(6 / (in + out)) and fills it", "[nn][init]") {
  Rng rng(1);
  Fans fans{300, 100};
  HostTensor w = glorotUniform(DType::F32, {300, 100}, fans, rng);
  CHECK(w.typeStr() == "f32[300,100]");
  double limit = std::sqrt(6.0 / 400.0);
  std::vector<double> values = w.toDoubles();
  double lowest = *std::min_element(values.begin(), values.end());
  double highest = *std::max_element(values.begin(), values.end());
  CHECK(lowest >= -limit);
  CHECK(highest <= limit);
  // 30000 uniform draws come within 0.1% of both ends.
  CHECK(lowest < -0.999 * limit);
  CHECK(highest > 0.999 * limit);
  double mean = 0;
  for (double v : values)
    mean += v / static_cast<double>(values.size());
  CHECK(std::abs(mean) < 0.01 * limit);
}

TEST_CASE("heNormal has standard deviation sqrt(2 / fanIn)", "[nn][init]") {
  Rng rng(2);
  HostTensor w = heNormal(DType::F32, {200, 500}, {50, 500}, rng);
  std::vector<double> values = w.toDoubles();
  double n = static_cast<double>(values.size());
  double mean = 0, square = 0;
  for (double v : values) {
    mean += v / n;
    square += v * v / n;
  }
  double stddev = std::sqrt(square - mean * mean);
  // Expected 0.2; with 100000 samples the standard error is about 0.00045.
  CHECK(stddev == Approx(0.2).epsilon(0.01));
  CHECK(std::abs(mean) < 0.005);
}

TEST_CASE("zeros, ones and constant initializers", "[nn][init]") {
  Rng rng(3);
  CHECK(zeros(DType::F16, {3}, {}, rng).toDoubles() == std::vector<double>{0, 0, 0});
  CHECK(ones(DType::I32, {2}, {}, rng).toDoubles() == std::vector<double>{1, 1});
  CHECK(constantInitializer(-2.5)(DType::F32, {2}, {}, rng).toDoubles() ==
        std::vector<double>{-2.5, -2.5});
  HostTensor uniform = uniformInitializer(3, 4)(DType::F32, {100}, {}, rng);
  for (double v : uniform.toDoubles())
    CHECK((v >= 3 && v < 4));
}

TEST_CASE("parameter values depend on the graph seed and the name, not build order", "[nn][init]") {
  auto build = [](uint64_t seed, bool reversed) {
    auto graph = std::make_unique<Graph>("model", seed);
    Tensor x = graph->input("x", {1, 4});
    Dense first(3, Activation::Linear, true, "first");
    Dense second(5, Activation::Linear, true, "second");
    if (reversed) {
      second(*graph, x);
      first(*graph, x);
    } else {
      first(*graph, x);
      second(*graph, x);
    }
    return graph;
  };
  auto a = build(42, false);
  auto b = build(42, true);
  auto c = build(43, false);
  for (const char *name : {"first.weight", "second.weight"}) {
    INFO(name);
    CHECK(a->paramValues().at(name).toDoubles() == b->paramValues().at(name).toDoubles());
    CHECK(a->paramValues().at(name).toDoubles() != c->paramValues().at(name).toDoubles());
  }
  // Different names draw different numbers even with equal shapes and seeds.
  Graph g("model", 42);
  Tensor x = g.input("x", {1, 4});
  Dense(3, Activation::Linear, true, "first")(g, x);
  Dense(3, Activation::Linear, true, "other")(g, x);
  CHECK(g.paramValues().at("first.weight").toDoubles() ==
        a->paramValues().at("first.weight").toDoubles());
  CHECK(g.paramValues().at("first.weight").toDoubles() !=
        g.paramValues().at("other.weight").toDoubles());
}
