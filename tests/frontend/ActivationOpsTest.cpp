// The DSL's composite activations (one op-table node each, decomposed by the compiler)
// against their textbook definitions through the reference interpreter, as nn::Activation
// values, and compiled for the CPU against the interpreter.
#include "compiler/Compile.h"
#include "frontend/Evaluate.h"
#include "frontend/Ops.h"
#include "frontend/nn/Activation.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cctype>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

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

struct CompositeCase {
  const char *name;
  ir::OpKind kind;
  std::function<Tensor(Tensor)> build;
};

const std::vector<CompositeCase> &compositeCases() {
  static const std::vector<CompositeCase> cases = {
      {"relu6", ir::OpKind::Relu6, [](Tensor x) { return relu6(x); }},
      {"hard_sigmoid", ir::OpKind::HardSigmoid, [](Tensor x) { return hardSigmoid(x, 0.2, 0.4); }},
      {"hard_swish", ir::OpKind::HardSwish, [](Tensor x) { return hardSwish(x); }},
      {"softplus", ir::OpKind::Softplus, [](Tensor x) { return softplus(x, 1.5, 12.0); }},
      {"softplus onnx", ir::OpKind::Softplus,
       [](Tensor x) { return softplus(x, 1.0, std::numeric_limits<double>::infinity()); }},
      {"mish", ir::OpKind::Mish, [](Tensor x) { return mish(x); }},
      {"leaky_relu", ir::OpKind::LeakyRelu, [](Tensor x) { return leakyRelu(x, 0.1); }},
      {"elu", ir::OpKind::Elu, [](Tensor x) { return elu(x, 0.8); }},
  };
  return cases;
}

/// The op names of the fused groups in a kDumpFused listing ("... ops=[exp, add]").
std::multiset<std::string> fusedOps(const std::string &listing) {
  std::multiset<std::string> ops;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    size_t start = line.find("ops=");
    if (start == std::string::npos)
      continue;
    std::string word;
    for (char ch : line.substr(start + 4)) {
      if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') {
        word += ch;
      } else if (!word.empty()) {
        ops.insert(word);
        word.clear();
      }
    }
    if (!word.empty())
      ops.insert(word);
  }
  return ops;
}

TEST_CASE("each composed activation is one op-table node") {
  for (const CompositeCase &c : compositeCases()) {
    CAPTURE(c.name);
    Graph graph("activation");
    graph.output("y", c.build(graph.input("x", {4})));
    REQUIRE(graph.finalize());
    REQUIRE(graph.ir().numNodes() == 1);
    CHECK(graph.ir().nodes()[0]->kind() == c.kind);
  }
}

TEST_CASE("the composed activations compile for the CPU and match the reference") {
  for (const CompositeCase &c : compositeCases()) {
    CAPTURE(c.name);
    Graph graph("activation_compiled");
    // An odd size, so vector loops end with a remainder; the values reach past every kink
    // and softplus's threshold.
    Tensor x = graph.input("x", {3, 37});
    graph.output("y", c.build(x) * 2.0);
    REQUIRE(graph.finalize());
    CompileOptions options;
    options.target = TargetKind::Cpu;
    options.useKernelCache = false;
    options.dump = kDumpFused;
    std::ostringstream dump;
    options.dumpStream = &dump;
    auto model = compile(graph.ir(), options);
    REQUIRE(model);
    // The decompose step ran before fusion: the fused groups hold only primitives, and the
    // activation and its scaling fuse into one kernel.
    CHECK(fusedOps(dump.str()).count(std::string(ir::opName(c.kind))) == 0);
    CHECK(fusedOps(dump.str()).count("exp") + fusedOps(dump.str()).count("clamp") +
              fusedOps(dump.str()).count("where") >
          0);
    CHECK(model->numKernels() == 1);
    Rng rng(7);
    NamedTensors inputs{{"x", HostTensor::randomUniform(DType::F32, {3, 37}, rng, -25, 25)}};
    auto got = model->run(inputs);
    REQUIRE(got);
    auto want = evaluate(graph, inputs);
    REQUIRE(want);
    const HostTensor &y = got->at("y");
    const HostTensor &reference = want->at("y");
    for (int64_t i = 0; i < reference.numElements(); ++i) {
      CAPTURE(i, inputs.at("x").getDouble(i));
      CHECK(y.getDouble(i) == Approx(reference.getDouble(i)).epsilon(1e-5).margin(1e-5));
    }
  }
}

} // namespace
} // namespace kiln
