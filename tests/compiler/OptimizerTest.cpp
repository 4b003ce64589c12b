// The optimizers' graph updates against plain C++ implementations over
// several steps (compiled for the CPU and in the interpreter), with a
// learning-rate schedule that never recompiles, and one kernel per parameter.
#include "CompileTestUtil.h"

#include "compiler/Compile.h"
#include "compiler/training/Optimizer.h"
#include "ir/graph/Interpreter.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::training;

namespace {

/// One optimizer, written the plain way: fp64 loops over the elements.
struct PlainOptimizer {
  OptimizerOptions options;
  std::vector<double> param, first, second; // first: momentum buffer or m; second: v

  void step(const std::vector<double> &grad, double lr, int64_t t) {
    for (size_t i = 0; i < param.size(); ++i) {
      double g = grad[i];
      if (options.kind != OptimizerKind::AdamW)
        g += options.weightDecay * param[i];
      if (options.kind == OptimizerKind::Sgd) {
        double d = g;
        if (options.momentum != 0) {
          first[i] = options.momentum * first[i] + g;
          d = options.nesterov ? g + options.momentum * first[i] : first[i];
        }
        param[i] -= lr * d;
        continue;
      }
      first[i] = options.beta1 * first[i] + (1 - options.beta1) * g;
      second[i] = options.beta2 * second[i] + (1 - options.beta2) * g * g;
      double mHat = first[i] / (1 - std::pow(options.beta1, static_cast<double>(t)));
      double vHat = second[i] / (1 - std::pow(options.beta2, static_cast<double>(t)));
      if (options.kind == OptimizerKind::AdamW)
        param[i] *= 1 - lr * options.weightDecay;
      param[i] -= lr * mHat / (std::sqrt(vHat) + options.epsilon);
    }
  }
};

struct Case {
  std::string name;
  OptimizerOptions options;
  ir::Shape shape;
};

std::vector<double> doublesOf(const HostTensor &t) { return t.toDoubles(); }

} // namespace

TEST_CASE("optimizer updates match plain C++ over several steps, one kernel per parameter",
          "[training][optimizer]") {
  // The Adam cases share betas, so one program's bias-correction inputs serve all.
  std::vector<Case> cases = {
      {"sgd", OptimizerOptions::sgd(0), {7, 3}},
      {"momentum", OptimizerOptions::sgd(0, 0.9), {5}},
      {"nesterov", OptimizerOptions::sgd(0, 0.8, true, 0.05), {2, 3, 4}},
      {"adam", OptimizerOptions::adam(0), {17}},
      {"adam_l2", OptimizerOptions::adam(0, 0.9, 0.999, 1e-8, 0.02), {}},
      {"adamw", OptimizerOptions::adamW(0, 0.1), {3, 5}},
  };
  ir::Graph graph("updates");
  auto scalars = addOptimizerScalars(graph, OptimizerOptions::adam(0), DType::F32);
  REQUIRE(scalars);
  for (const Case &c : cases) {
    ir::TensorType type{DType::F32, c.shape};
    ir::Value *param = *graph.addParam(c.name, type);
    ir::Value *grad = *graph.addInput(c.name + ".grad", type);
    std::vector<ir::Value *> state;
    for (const std::string &slot : optimizerStateSlots(c.options))
      state.push_back(*graph.addParam(c.name + "." + slot, type));
    auto update = buildParamUpdate(graph, c.options, *scalars, param, grad, state);
    REQUIRE(update);
    auto packed = packParamUpdate(graph, *update);
    REQUIRE(packed);
    REQUIRE(graph.addOutput(c.name, *packed));
  }
  CompileOptions options;
  options.target = TargetKind::Cpu;
  auto model = compile(graph, options);
  REQUIRE(model);
  // Each parameter's update (new value and every state slot) is one fused kernel.
  CHECK(model->numKernels() == cases.size());

  uint64_t seed = test::freshSeed();
  CAPTURE(seed);
  Rng rng(seed);
  NamedTensors tensors;          // the compiled program's state, fed back each step
  std::vector<PlainOptimizer> plain;
  for (const Case &c : cases) {
    HostTensor param = HostTensor::randomUniform(DType::F32, c.shape, rng);
    tensors[c.name] = param;
    for (const std::string &slot : optimizerStateSlots(c.options))
      tensors[c.name + "." + slot] = HostTensor(DType::F32, c.shape);
    std::vector<double> zeros(static_cast<size_t>(param.numElements()), 0.0);
    plain.push_back({c.options, doublesOf(param), zeros, zeros});
  }
  // A decaying schedule: the learning rate is an input, so the one compile serves every step.
  const double schedule[] = {0.1, 0.05, 0.02, 0.01, 0.005};
  for (int64_t t = 1; t <= 5; ++t) {
    double lr = schedule[t - 1];
    for (auto &[name, value] : optimizerScalarValues(cases[3].options, lr, t, DType::F32))
      tensors[name] = value;
    for (size_t i = 0; i < cases.size(); ++i) {
      HostTensor grad = HostTensor::randomUniform(DType::F32, cases[i].shape, rng);
      tensors[cases[i].name + ".grad"] = grad;
      plain[i].step(doublesOf(grad), lr, t);
    }
    auto outputs = model->run(tensors, {.poisonBuffers = true});
    REQUIRE(outputs);
    auto interpreted = ir::interpret(graph, tensors);
    REQUIRE(interpreted);
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case &c = cases[i];
      CAPTURE(c.name, t);
      const HostTensor &packed = outputs->at(c.name);
      std::vector<std::string> slots = optimizerStateSlots(c.options);
      REQUIRE(packed.shape()[0] == static_cast<int64_t>(1 + slots.size()));
      int64_t n = static_cast<int64_t>(plain[i].param.size());
      // f32 arithmetic against fp64 over five steps: 2e-5 relative, 1e-6 absolute.
      for (int64_t e = 0; e < n; ++e) {
        CHECK(packed.getDouble(e) == Approx(plain[i].param[e]).epsilon(2e-5).margin(1e-6));
        CHECK(interpreted->at(c.name).getDouble(e) == Approx(packed.getDouble(e)).epsilon(1e-6));
        if (!slots.empty())
          CHECK(packed.getDouble(n + e) == Approx(plain[i].first[e]).epsilon(2e-5).margin(1e-6));
        if (slots.size() > 1)
          CHECK(packed.getDouble(2 * n + e) ==
                Approx(plain[i].second[e]).epsilon(2e-5).margin(1e-7));
      }
      // Feed the compiled results back: the parameter, then each state slot.
      std::vector<std::string> names = {c.name};
      for (const std::string &slot : slots)
        names.push_back(c.name + "." + slot);
      for (size_t part = 0; part < names.size(); ++part) {
        HostTensor &target = tensors[names[part]];
        std::memcpy(target.bytes().data(), packed.bytes().data() + part * target.byteSize(),
                    target.byteSize());
      }
    }
  }
}

TEST_CASE("optimizer options out of range are errors naming the optimizer",
          "[training][optimizer]") {
  auto messageOf = [](const OptimizerOptions &options) {
    auto status = validateOptimizer(options);
    REQUIRE_FALSE(status);
    return status.error().message();
  };
  CHECK_THAT(messageOf(OptimizerOptions::sgd(-1)),
             Catch::Contains("sgd") && Catch::Contains("learning rate"));
  CHECK_THAT(messageOf(OptimizerOptions::sgd(0.1, 0, true)), Catch::Contains("nesterov"));
  CHECK_THAT(messageOf(OptimizerOptions::adam(0.1, 1.0)), Catch::Contains("beta1"));
  CHECK_THAT(messageOf(OptimizerOptions::adamW(0.1, -0.1)),
             Catch::Contains("adamw") && Catch::Contains("weight decay"));
  CHECK(validateOptimizer(OptimizerOptions::adamW(1e-3)));
}
