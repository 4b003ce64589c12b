// The DSL's composed activations against their textbook definitions, through the reference
// interpreter, and as nn::Activation values.
#include "frontend/Evaluate.h"
#include "frontend/Ops.h"
#include "frontend/nn/Activation.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

namespace kiln {
namespace {

double softplusDefinition(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }

TEST_CASE("composed activations compute their definitions, large inputs included") {
  const std::vector<double> points = {-30, -6.5, -3, -1, -0.25, 0, 0.25, 1, 2.9, 3, 6, 7.5, 30, 90};
  struct Case {
    const char *name;
    std::function<Tensor(Tensor)> build;
    std::function<double(double)> definition;
  };
  const std::vector<Case> cases = {
      {"relu6", [](Tensor x) { return relu6(x); },
       [](double x) { return std::min(std::max(x, 0.0), 6.0); }},
      {"hard_sigmoid", [](Tensor x) { return hardSigmoid(x); },
       [](double x) { return std::min(std::max(x + 3, 0.0), 6.0) / 6; }},
      {"hard_sigmoid(0.2, 0.5)", [](Tensor x) { return hardSigmoid(x, 0.2, 0.5); },
       [](double x) { return std::min(std::max(0.2 * x + 0.5, 0.0), 1.0); }},
      {"hard_swish", [](Tensor x) { return hardSwish(x); },
       [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; }},
      {"softplus", [](Tensor x) { return softplus(x); }, softplusDefinition},
      {"softplus(beta 2)", [](Tensor x) { return softplus(x, 2.0, 20.0); },
       [](double x) { return 2 * x > 20 ? x : std::log1p(std::exp(2 * x)) / 2; }},
      {"mish", [](Tensor x) { return mish(x); },
       [](double x) { return x * std::tanh(softplusDefinition(x)); }},
      {"leaky_relu", [](Tensor x) { return leakyRelu(x, 0.2); },
       [](double x) { return x >= 0 ? x : 0.2 * x; }},
      {"elu", [](Tensor x) { return elu(x, 0.7); },
       [](double x) { return x > 0 ? x : 0.7 * std::expm1(x); }},
  };
  for (DType dtype : {DType::F64, DType::F32}) {
    for (const Case &c : cases) {
      CAPTURE(c.name, dtypeName(dtype));
      Graph graph("activation");
      Tensor x = graph.input("x", {static_cast<int64_t>(points.size())}, dtype);
      graph.output("y", c.build(x));
      auto outputs = evaluate(graph, {{"x", HostTensor::fromDoubles(dtype, {static_cast<int64_t>(
                                                                              points.size())},
                                                                    points)}});
      REQUIRE(outputs);
      for (size_t i = 0; i < points.size(); ++i) {
        CAPTURE(points[i]);
        double expected = c.definition(points[i]);
        // In f32, log(1 + exp(-|x|)) is off by up to f32's epsilon in absolute terms (kiln
        // has no log1p), hence the absolute margin.
        CHECK(outputs->at("y").getDouble(static_cast<int64_t>(i)) ==
              Approx(expected)
                  .epsilon(dtype == DType::F64 ? 1e-12 : 1e-6)
                  .margin(dtype == DType::F64 ? 1e-12 : 2e-7));
      }
    }
  }
}

TEST_CASE("the composed activations are nn::Activation values too") {
  for (nn::Activation activation :
       {nn::Activation::Relu6, nn::Activation::HardSigmoid, nn::Activation::HardSwish,
        nn::Activation::Softplus, nn::Activation::Mish, nn::Activation::LeakyRelu,
        nn::Activation::Elu}) {
    CAPTURE(nn::activationName(activation));
    Graph graph("activation");
    Tensor x = graph.input("x", {3});
    Tensor y = nn::applyActivation(x, activation);
    REQUIRE(y.ok());
    graph.output("y", y);
    auto outputs = evaluate(graph, {{"x", HostTensor::fromDoubles(DType::F32, {3},
                                                                  std::vector<double>{-2, 0, 2})}});
    REQUIRE(outputs);
    // Every one of them is positive at 2 and at most about 2 (softplus(2) = 2.13).
    double at2 = outputs->at("y").getDouble(2);
    CHECK(at2 > 0);
    CHECK(at2 <= 2.2);
    CHECK(outputs->at("y").getDouble(0) != outputs->at("y").getDouble(2));
  }
}

} // namespace
} // namespace kiln
