// appendGradients as a whole: sums over several uses, wrts the loss does not
// reach, the seed form, intermediate values, the documented conventions (ties,
// zeros, casts, dtypes) and the errors, with their text.
#include "GradientCheck.h"
#include "PassTestUtil.h"

#include "passes/graph/Autodiff.h"

#include <cmath>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;
using kiln::test::checkGradients;

namespace {

Value *op(Graph &graph, OpKind kind, std::vector<Value *> operands, AttrMap attrs = {},
          Location location = {}) {
  auto value = graph.addNode(kind, std::move(operands), std::move(attrs), location);
  if (!value)
    FAIL(value.error().str());
  return *value;
}

Value *input(Graph &graph, std::string name, DType dtype, Shape shape) {
  auto value = graph.addInput(std::move(name), tensorType(dtype, std::move(shape)));
  REQUIRE(value);
  return *value;
}

Value *sumAll(Graph &graph, Value *x) {
  std::vector<int64_t> axes;
  for (int64_t axis = 0; axis < x->type().rank(); ++axis)
    axes.push_back(axis);
  return op(graph, OpKind::ReduceSum, {x}, {{"axes", axes}});
}

/// Runs `graph` with `gradients` as outputs "g0", "g1", ... and returns them.
std::vector<HostTensor> runGradients(Graph &graph, const std::vector<Value *> &gradients,
                                     const NamedTensors &bindings) {
  for (size_t i = 0; i < gradients.size(); ++i)
    REQUIRE(graph.addOutput(fmt::format("g{}", i), gradients[i]));
  NamedTensors outputs = interpretOrFail(graph, bindings);
  std::vector<HostTensor> result;
  for (size_t i = 0; i < gradients.size(); ++i)
    result.push_back(outputs.at(fmt::format("g{}", i)));
  return result;
}

HostTensor f64(Shape shape, std::vector<double> values) {
  return HostTensor::fromDoubles(DType::F64, std::move(shape), values);
}

} // namespace

TEST_CASE("autodiff sums the gradients of a value used several times", "[autodiff]") {
  // L = sum(x * x + sin(x) + x): dL/dx = 2x + cos(x) + 1.
  Graph graph;
  Value *x = input(graph, "x", DType::F64, {3, 5});
  Value *square = op(graph, OpKind::Mul, {x, x});
  Value *sine = op(graph, OpKind::Sin, {x});
  Value *sum = op(graph, OpKind::Add, {op(graph, OpKind::Add, {square, sine}), x});
  Value *loss = sumAll(graph, sum);
  auto gradients = appendGradients(graph, loss, std::vector<Value *>{x});
  REQUIRE(gradients);
  NamedTensors bindings = randomBindings(graph, 3);
  HostTensor gradient = runGradients(graph, *gradients, bindings)[0];
  const HostTensor &xs = bindings.at("x");
  for (int64_t i = 0; i < xs.numElements(); ++i) {
    double value = xs.getDouble(i);
    CHECK(gradient.getDouble(i) == Approx(2 * value + std::cos(value) + 1).epsilon(1e-12));
  }
  checkGradients("several uses",
                 [](Graph &g) {
                   Value *gx = input(g, "x", DType::F64, {2, 3});
                   Value *product = op(g, OpKind::Mul, {gx, op(g, OpKind::Exp, {gx})});
                   return op(g, OpKind::Div, {product, op(g, OpKind::Add, {gx, product})});
                 },
                 {{"x", f64({2, 3}, {0.3, 1.2, 0.7, 1.9, 0.5, 1.1})}}, {"x"});
}

TEST_CASE("autodiff gives zeros to a wrt the loss does not depend on", "[autodiff]") {
  Graph graph;
  Value *x = input(graph, "x", DType::F32, {3});
  Value *unused = input(graph, "unused", DType::F32, {2, 5});
  auto gradients = appendGradients(graph, sumAll(graph, op(graph, OpKind::Exp, {x})),
                                   std::vector<Value *>{unused, x});
  REQUIRE(gradients);
  REQUIRE((*gradients)[0]->type() == unused->type());
  HostTensor zeros = runGradients(graph, *gradients, randomBindings(graph, 5))[0];
  for (int64_t i = 0; i < zeros.numElements(); ++i)
    CHECK(zeros.getDouble(i) == 0.0);
}

TEST_CASE("autodiff takes a seed for a non-scalar loss", "[autodiff]") {
  // y = exp(x) with incoming gradient s: dx = s * exp(x).
  Graph graph;
  Value *x = input(graph, "x", DType::F64, {3, 5});
  Value *seed = input(graph, "seed", DType::F64, {3, 5});
  Value *y = op(graph, OpKind::Exp, {x});
  auto gradients = appendGradients(graph, y, std::vector<Value *>{x}, seed);
  REQUIRE(gradients);
  NamedTensors bindings = randomBindings(graph, 7);
  HostTensor gradient = runGradients(graph, *gradients, bindings)[0];
  for (int64_t i = 0; i < gradient.numElements(); ++i)
    CHECK(gradient.getDouble(i) ==
          Approx(bindings.at("seed").getDouble(i) * std::exp(bindings.at("x").getDouble(i)))
              .epsilon(1e-12));

  SECTION("a seed of another type is an error") {
    Value *wrong = input(graph, "wrong", DType::F64, {5});
    auto failed = appendGradients(graph, y, std::vector<Value *>{x}, wrong);
    REQUIRE_FALSE(failed);
    CHECK(failed.error().message() ==
          "autodiff: the seed is f64[5]; it must have the loss's type f64[3,5]");
  }
}

TEST_CASE("autodiff differentiates with respect to intermediate values", "[autodiff]") {
  // h = tanh(x), L = sum(h * h): dL/dh = 2h, dL/dx = 2h (1 - h^2).
  Graph graph;
  Value *x = input(graph, "x", DType::F64, {2, 3});
  Value *h = op(graph, OpKind::Tanh, {x});
  Value *loss = sumAll(graph, op(graph, OpKind::Mul, {h, h}));
  auto gradients = appendGradients(graph, loss, std::vector<Value *>{h, x});
  REQUIRE(gradients);
  NamedTensors bindings = randomBindings(graph, 11);
  auto values = runGradients(graph, *gradients, bindings);
  for (int64_t i = 0; i < 6; ++i) {
    double t = std::tanh(bindings.at("x").getDouble(i));
    CHECK(values[0].getDouble(i) == Approx(2 * t).epsilon(1e-12));
    CHECK(values[1].getDouble(i) == Approx(2 * t * (1 - t * t)).epsilon(1e-12));
  }
}

TEST_CASE("autodiff leaves no unused backward nodes", "[autodiff]") {
  // d(x * c)/dx needs g * c only; the rule's g * x for c must be erased.
  Graph graph;
  Value *x = input(graph, "x", DType::F32, {4});
  Value *c = input(graph, "c", DType::F32, {4});
  Value *loss = sumAll(graph, op(graph, OpKind::Mul, {x, c}));
  REQUIRE(graph.addOutput("loss", loss));
  auto gradients = appendGradients(graph, loss, std::vector<Value *>{x});
  REQUIRE(gradients);
  for (Node *n : graph.nodes())
    CHECK(
        (n->result()->hasUses() || graph.isOutput(n->result()) || n->result() == (*gradients)[0]));
  CHECK(x->uses().size() == 1); // only the forward mul reads x
}

TEST_CASE("autodiff's conventions at ties, zeros and casts", "[autodiff]") {
  Graph graph;
  SECTION("max and min split a tie evenly") {
    Value *a = input(graph, "a", DType::F64, {3});
    Value *b = input(graph, "b", DType::F64, {3});
    Value *loss = sumAll(graph, op(graph, OpKind::Max, {a, b}));
    auto gradients = appendGradients(graph, loss, std::vector<Value *>{a, b});
    REQUIRE(gradients);
    auto values =
        runGradients(graph, *gradients, {{"a", f64({3}, {1, 2, 3})}, {"b", f64({3}, {0, 2, 4})}});
    CHECK(values[0].toDoubles() == std::vector<double>{1, 0.5, 0});
    CHECK(values[1].toDoubles() == std::vector<double>{0, 0.5, 1});
  }
  SECTION("reduce_max splits among tied maxima") {
    Value *x = input(graph, "x", DType::F64, {2, 4});
    Value *loss =
        sumAll(graph, op(graph, OpKind::ReduceMax, {x}, {{"axes", std::vector<int64_t>{1}}}));
    auto gradients = appendGradients(graph, loss, std::vector<Value *>{x});
    REQUIRE(gradients);
    auto values = runGradients(graph, *gradients, {{"x", f64({2, 4}, {1, 5, 5, 5, 2, 7, 1, 0})}});
    CHECK(values[0].toDoubles() == std::vector<double>{0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 1, 0, 0});
  }
  SECTION("reduce_prod with one zero and with two zeros") {
    Value *x = input(graph, "x", DType::F64, {3, 3});
    Value *loss =
        sumAll(graph, op(graph, OpKind::ReduceProd, {x}, {{"axes", std::vector<int64_t>{1}}}));
    auto gradients = appendGradients(graph, loss, std::vector<Value *>{x});
    REQUIRE(gradients);
    auto values =
        runGradients(graph, *gradients, {{"x", f64({3, 3}, {2, 3, 4, 2, 0, 5, 0, 3, 0})}});
    CHECK(values[0].toDoubles() == std::vector<double>{12, 8, 6, 0, 10, 0, 0, 0, 0});
  }
  SECTION("relu, abs and clamp at their kinks") {
    Value *x = input(graph, "x", DType::F64, {3});
    Value *relu = op(graph, OpKind::Relu, {x});
    Value *abs = op(graph, OpKind::Abs, {x});
    Value *clamp = op(graph, OpKind::Clamp, {x}, {{"min", 0.0}, {"max", 1.0}});
    std::vector<Value *> gradients;
    for (Value *y : {relu, abs, clamp}) {
      auto g = appendGradients(graph, sumAll(graph, y), std::vector<Value *>{x});
      REQUIRE(g);
      gradients.push_back((*g)[0]);
    }
    auto values = runGradients(graph, gradients, {{"x", f64({3}, {0, 1, -1})}});
    CHECK(values[0].toDoubles() == std::vector<double>{0, 1, 0});
    CHECK(values[1].toDoubles() == std::vector<double>{0, 1, -1});
    CHECK(values[2].toDoubles() == std::vector<double>{1, 1, 0}); // bounds pass through
  }
  SECTION("a cast through an integer stops the gradient") {
    Value *x = input(graph, "x", DType::F32, {4});
    Value *rounded = op(graph, OpKind::Cast, {x}, {{"dtype", DType::I32}});
    Value *back = op(graph, OpKind::Cast, {rounded}, {{"dtype", DType::F32}});
    Value *loss = sumAll(graph, op(graph, OpKind::Add, {back, x}));
    auto gradients = appendGradients(graph, loss, std::vector<Value *>{x});
    REQUIRE(gradients);
    auto values = runGradients(graph, *gradients, randomBindings(graph, 2));
    CHECK(values[0].toDoubles() == std::vector<double>{1, 1, 1, 1});
  }
}

TEST_CASE("autodiff keeps the graph's dtypes", "[autodiff]") {
  // An f16/bf16 graph gets f16/bf16 gradients, close to the f64 ones.
  for (DType dtype : {DType::F16, DType::BF16, DType::F32}) {
    INFO(dtypeName(dtype));
    auto build = [dtype](Graph &graph, DType type) {
      Value *x = input(graph, "x", type, {3, 4});
      Value *w = input(graph, "w", type, {4, 5});
      Value *scale = input(graph, "scale", type, {5});
      Value *bias = input(graph, "bias", type, {5});
      Value *mm = op(graph, OpKind::MatMul, {x, w},
                     {{"accumulate", type == DType::F64 ? DType::F64 : DType::F32}});
      Value *norm = op(graph, OpKind::LayerNorm, {mm, scale, bias});
      Value *act = op(graph, OpKind::Gelu, {op(graph, OpKind::Softmax, {norm})});
      (void)dtype;
      return std::vector<Value *>{sumAll(graph, act), x, w, scale, bias};
    };
    Graph narrow, wide;
    auto n = build(narrow, dtype);
    auto w = build(wide, DType::F64);
    auto narrowGradients = appendGradients(narrow, n[0], std::span(n).subspan(1));
    auto wideGradients = appendGradients(wide, w[0], std::span(w).subspan(1));
    REQUIRE(narrowGradients);
    REQUIRE(wideGradients);
    NamedTensors bindings = randomBindings(narrow, 13, -1.0, 1.0);
    NamedTensors wideBindings;
    for (auto &[name, tensor] : bindings)
      wideBindings[name] = tensor.castTo(DType::F64);
    auto narrowValues = runGradients(narrow, *narrowGradients, bindings);
    auto wideValues = runGradients(wide, *wideGradients, wideBindings);
    // f16 keeps 11 bits, bf16 8: a few roundings of O(1) values.
    double tolerance = dtype == DType::BF16 ? 0.1 : dtype == DType::F16 ? 0.02 : 1e-4;
    for (size_t i = 0; i < narrowValues.size(); ++i) {
      CHECK(narrowValues[i].dtype() == dtype);
      for (int64_t e = 0; e < narrowValues[i].numElements(); ++e)
        CHECK(std::fabs(narrowValues[i].getDouble(e) - wideValues[i].getDouble(e)) <= tolerance);
    }
  }
}

TEST_CASE("autodiff's errors name what is wrong and where", "[autodiff]") {
  Graph graph;
  Value *x = input(graph, "x", DType::F32, {3, 4});
  SECTION("a non-float loss") {
    Value *index = op(graph, OpKind::ArgMax, {x}, {{"axis", int64_t{1}}}, Location{"model.cpp", 7});
    auto failed = appendGradients(graph, index, std::vector<Value *>{x});
    REQUIRE_FALSE(failed);
    CHECK(failed.error().message() == "autodiff: the loss (the result of argmax at model.cpp:7) "
                                      "is i64[3]; it must be a float value");
    REQUIRE(failed.error().location());
    CHECK(failed.error().location()->line == 7);
  }
  SECTION("a loss with several elements and no seed") {
    Value *y = op(graph, OpKind::Exp, {x});
    auto failed = appendGradients(graph, y, std::vector<Value *>{x});
    REQUIRE_FALSE(failed);
    CHECK(failed.error().message() ==
          "autodiff: the loss (the result of exp) is f32[3,4] with 12 elements; a loss without "
          "a seed must have one element (give the incoming gradient as the seed)");
  }
  SECTION("an integer wrt") {
    Value *indices = input(graph, "indices", DType::I64, {2});
    Value *loss = sumAll(graph, op(graph, OpKind::Gather, {x, indices}));
    auto failed = appendGradients(graph, loss, std::vector<Value *>{x, indices});
    REQUIRE_FALSE(failed);
    CHECK(failed.error().message() ==
          "autodiff: wrt #1 (input 'indices') is i64[2]; only float values have gradients");
  }
}
