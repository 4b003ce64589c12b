// Gradient checking for autodiff tests: the gradients appendGradients builds,
// run by the fp64 reference interpreter, against central finite differences
// of the same loss, also run by the interpreter.
//
// The loss is L = sum(y * r) for the checked value y and a fresh random r, so
// every element of y's gradient is exercised with a different weight.
#pragma once

#include "ir/graph/Graph.h"
#include "ir/graph/Interpreter.h"
#include "passes/graph/Autodiff.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

namespace kiln::test {

/// Builds the checked value into a graph whose inputs and parameters the
/// caller adds itself (so that it can be built twice, identically).
using BuildCheckedValue = std::function<ir::Value *(ir::Graph &graph)>;

struct GradientCheckOptions {
  /// The finite-difference step, relative to max(1, |x|).
  double step = 1e-6;
  /// Allowed |analytic - numeric|, relative to max(1, the largest |analytic|
  /// element of that gradient). Central differences in fp64 with a 1e-6 step
  /// are accurate to ~1e-9 on these small graphs.
  double tolerance = 1e-6;
  /// Check at most this many elements of each gradient (chosen at random);
  /// 0 checks every element.
  int64_t maxElements = 0;
  uint64_t seed = 1;
};

/// Makes a whole graph whose output `outputName` is the checked value.
using MakeCheckedGraph = std::function<std::unique_ptr<ir::Graph>()>;

/// A graph with the loss sum(y * r) added, r being the new input "__weights".
struct LossGraph {
  std::unique_ptr<ir::Graph> owned;
  ir::Value *loss = nullptr;
  ir::Graph &graph() { return *owned; }
};

inline void buildLoss(LossGraph &lossGraph, const MakeCheckedGraph &make,
                      const std::string &outputName) {
  lossGraph.owned = make();
  REQUIRE(lossGraph.owned);
  ir::Graph &graph = *lossGraph.owned;
  ir::Value *y = nullptr;
  for (const ir::GraphOutput &output : graph.outputs())
    if (output.name == outputName)
      y = output.value;
  REQUIRE(y != nullptr);
  REQUIRE(isFloatingPoint(y->type().dtype));
  auto weights = graph.addInput("__weights", y->type());
  REQUIRE(weights);
  auto weighted = graph.addNode(ir::OpKind::Mul, {y, *weights});
  REQUIRE(weighted);
  std::vector<int64_t> axes(static_cast<size_t>(y->type().rank()));
  std::iota(axes.begin(), axes.end(), 0);
  ir::Value *loss = *weighted;
  if (!axes.empty()) {
    auto summed = graph.addNode(ir::OpKind::ReduceSum, {*weighted}, {{"axes", axes}});
    REQUIRE(summed);
    loss = *summed;
  }
  REQUIRE(graph.addOutput("loss", loss));
  lossGraph.loss = loss;
}

inline double interpretLoss(const ir::Graph &graph, const NamedTensors &inputs) {
  auto outputs = ir::interpret(graph, inputs);
  if (!outputs)
    FAIL(outputs.error().str());
  return outputs->at("loss").getDouble(0);
}

/// Checks the gradient of sum(y * r), y being the output `outputName` of the
/// graphs `make` returns, with respect to each input or parameter named in
/// `wrtNames` (all of them f64) at `values` (every input and parameter of the
/// graph). `label` names the case in failures.
inline void checkGraphGradients(const std::string &label, const MakeCheckedGraph &make,
                                const std::string &outputName, NamedTensors values,
                                const std::vector<std::string> &wrtNames,
                                GradientCheckOptions options = {}) {
  INFO("gradient check: " << label);
  LossGraph forward, backward;
  buildLoss(forward, make, outputName);
  buildLoss(backward, make, outputName);
  Rng rng(options.seed * 7919 + 17);
  const ir::Value *weights = forward.graph().findInput("__weights");
  values["__weights"] = HostTensor::randomNormal(weights->type().dtype, weights->type().shape, rng);

  std::vector<ir::Value *> wrt;
  for (const std::string &name : wrtNames) {
    ir::Value *value = backward.graph().findInput(name);
    if (value == nullptr)
      value = backward.graph().findParam(name);
    REQUIRE(value != nullptr);
    wrt.push_back(value);
  }
  auto gradients = passes::appendGradients(backward.graph(), backward.loss, wrt);
  if (!gradients)
    FAIL(gradients.error().str());
  for (size_t i = 0; i < wrt.size(); ++i) {
    REQUIRE((*gradients)[i]->type() == wrt[i]->type());
    REQUIRE(backward.graph().addOutput("grad." + wrtNames[i], (*gradients)[i]));
  }
  auto outputs = ir::interpret(backward.graph(), values);
  if (!outputs)
    FAIL(outputs.error().str());

  for (const std::string &name : wrtNames) {
    const HostTensor &analytic = outputs->at("grad." + name);
    HostTensor &point = values.at(name);
    REQUIRE(point.dtype() == DType::F64);
    int64_t count = point.numElements();
    std::vector<int64_t> elements(static_cast<size_t>(count));
    std::iota(elements.begin(), elements.end(), 0);
    if (options.maxElements > 0 && count > options.maxElements) {
      for (int64_t i = 0; i < options.maxElements; ++i)
        std::swap(elements[static_cast<size_t>(i)],
                  elements[static_cast<size_t>(
                      i + static_cast<int64_t>(rng.nextU64() % static_cast<uint64_t>(count - i)))]);
      elements.resize(static_cast<size_t>(options.maxElements));
    }
    double scale = 1.0;
    for (int64_t i = 0; i < count; ++i)
      scale = std::max(scale, std::fabs(analytic.getDouble(i)));
    double worst = 0.0;
    std::string worstWhere;
    for (int64_t element : elements) {
      double x = point.getDouble(element);
      double h = options.step * std::max(1.0, std::fabs(x));
      point.setDouble(element, x + h);
      double above = interpretLoss(forward.graph(), values);
      point.setDouble(element, x - h);
      double below = interpretLoss(forward.graph(), values);
      point.setDouble(element, x);
      double numeric = (above - below) / (2.0 * h);
      double error = std::fabs(numeric - analytic.getDouble(element));
      if (!(error <= worst)) {
        worst = error;
        worstWhere = fmt::format("element {} of '{}' at x = {}: analytic {}, numeric {}", element,
                                 name, x, analytic.getDouble(element), numeric);
      }
    }
    INFO(worstWhere);
    CHECK(worst <= options.tolerance * scale);
  }
}

/// checkGraphGradients for a value that `build` adds to an empty graph.
inline void checkGradients(const std::string &label, const BuildCheckedValue &build,
                           NamedTensors values, const std::vector<std::string> &wrtNames,
                           GradientCheckOptions options = {}) {
  auto make = [&build]() {
    auto graph = std::make_unique<ir::Graph>("gradient_check");
    ir::Value *y = build(*graph);
    REQUIRE(y != nullptr);
    REQUIRE(graph->addOutput("y", y));
    return graph;
  };
  checkGraphGradients(label, make, "y", std::move(values), wrtNames, options);
}

} // namespace kiln::test
