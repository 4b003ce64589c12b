// Every gradient rule of the op table against central finite differences in
// fp64: one-op graphs y = op(x...) with L = sum(y * r), odd shapes,
// broadcasting and every attribute varied, inputs kept away from kinks. The
// coverage test fails when an op has a rule but no case here.
#include "GradientCheck.h"

#include "ir/graph/Gradients.h"

#include <set>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::test;

namespace {

using Generator = std::function<double(Rng &)>;

Generator uniform(double low, double high) {
  return [low, high](Rng &rng) { return rng.uniform(low, high); };
}
/// |x| in [low, high] with a random sign: away from a kink at 0.
Generator awayFromZero(double low = 0.2, double high = 2.0) {
  return [low, high](Rng &rng) {
    double magnitude = rng.uniform(low, high);
    return rng.uniform() < 0.5 ? -magnitude : magnitude;
  };
}
/// Uniform in [low, high] but at least `gap` from each of `kinks`.
Generator avoiding(double low, double high, std::vector<double> kinks, double gap = 0.05) {
  return [=](Rng &rng) {
    for (;;) {
      double v = rng.uniform(low, high);
      if (std::all_of(kinks.begin(), kinks.end(),
                      [&](double kink) { return std::fabs(v - kink) >= gap; }))
        return v;
    }
  };
}
/// Integer indices in [-size, size): negative ones count from the end.
Generator indexIn(int64_t size) {
  return [size](Rng &rng) {
    return static_cast<double>(static_cast<int64_t>(rng.nextU64() % (2 * size)) - size);
  };
}
Generator coin() {
  return [](Rng &rng) { return rng.uniform() < 0.5 ? 0.0 : 1.0; };
}

struct Operand {
  std::string name;
  Shape shape;
  Generator generate = uniform(-2.0, 2.0);
  DType dtype = DType::F64;
};

struct Case {
  std::string label;
  OpKind op;
  std::vector<Operand> operands;
  AttrMap attrs = {};
  GradientCheckOptions options = {};
};

Operand indices(std::string name, Shape shape, int64_t size) {
  return Operand{std::move(name), std::move(shape), indexIn(size), DType::I64};
}

std::vector<int64_t> v(std::initializer_list<int64_t> values) { return values; }

std::vector<Case> cases() {
  auto any = uniform(-2.0, 2.0);
  auto positive = uniform(0.3, 2.0);
  GradientCheckOptions castOptions;
  // The f32 result rounds x + h, so the step must dwarf f32's ulp.
  castOptions.step = 1e-2;
  castOptions.tolerance = 1e-4;
  std::vector<Case> list = {
      {"neg", OpKind::Neg, {{"x", {3, 5}}}},
      {"abs", OpKind::Abs, {{"x", {2, 3, 7}, awayFromZero()}}},
      {"exp", OpKind::Exp, {{"x", {3, 5}}}},
      {"log", OpKind::Log, {{"x", {3, 5}, positive}}},
      {"sqrt", OpKind::Sqrt, {{"x", {3, 5}, positive}}},
      {"rsqrt", OpKind::Rsqrt, {{"x", {3, 5}, positive}}},
      {"tanh", OpKind::Tanh, {{"x", {2, 3, 7}}}},
      {"sigmoid", OpKind::Sigmoid, {{"x", {3, 5}}}},
      {"relu", OpKind::Relu, {{"x", {2, 3, 7}, awayFromZero()}}},
      {"gelu erf", OpKind::Gelu, {{"x", {3, 5}, uniform(-3, 3)}}},
      {"gelu tanh",
       OpKind::Gelu,
       {{"x", {3, 5}, uniform(-3, 3)}},
       {{"approximate", std::string("tanh")}}},
      {"silu", OpKind::Silu, {{"x", {3, 5}}}},
      {"erf", OpKind::Erf, {{"x", {3, 5}}}},
      {"sin", OpKind::Sin, {{"x", {3, 5}}}},
      {"cos", OpKind::Cos, {{"x", {3, 5}}}},
      {"cast f64 to f32", OpKind::Cast, {{"x", {3, 5}}}, {{"dtype", DType::F32}}, castOptions},
      {"clamp",
       OpKind::Clamp,
       {{"x", {2, 3, 7}, avoiding(-2, 2, {-0.7, 0.9})}},
       {{"min", -0.7}, {"max", 0.9}}},
      // The composite elementwise ops: autodiff differentiates their decompositions.
      {"relu6", OpKind::Relu6, {{"x", {3, 5}, avoiding(-2, 8, {0, 6})}}},
      {"hard_sigmoid",
       OpKind::HardSigmoid,
       {{"x", {3, 5}, avoiding(-4, 4, {-2.5, 2.5})}},
       {{"alpha", 0.2}, {"beta", 0.5}}},
      {"hard_sigmoid pytorch",
       OpKind::HardSigmoid,
       {{"x", {2, 7}, avoiding(-5, 5, {-3, 3})}},
       {{"alpha", 1.0 / 6.0}, {"beta", 0.5}}},
      {"hard_swish", OpKind::HardSwish, {{"x", {3, 5}, avoiding(-5, 5, {-3, 3})}}},
      {"softplus", OpKind::Softplus, {{"x", {3, 5}, uniform(-4, 4)}}},
      {"softplus beta threshold",
       OpKind::Softplus,
       {{"x", {3, 5}, avoiding(-3, 3, {1.5})}},
       {{"beta", 2.0}, {"threshold", 3.0}}},
      {"mish", OpKind::Mish, {{"x", {2, 3, 7}, uniform(-4, 4)}}},
      {"leaky_relu", OpKind::LeakyRelu, {{"x", {3, 5}, awayFromZero()}}, {{"alpha", 0.3}}},
      {"elu", OpKind::Elu, {{"x", {3, 5}, awayFromZero()}}, {{"alpha", 0.7}}},

      {"add broadcast", OpKind::Add, {{"a", {3, 5}}, {"b", {5}}}},
      {"add both broadcast", OpKind::Add, {{"a", {2, 1, 7}}, {"b", {3, 1}}}},
      {"sub broadcast", OpKind::Sub, {{"a", {3, 1}}, {"b", {2, 3, 7}}}},
      {"mul broadcast", OpKind::Mul, {{"a", {2, 3, 7}}, {"b", {3, 1}}}},
      {"mul scalar", OpKind::Mul, {{"a", {3, 5}}, {"b", {}}}},
      {"div broadcast", OpKind::Div, {{"a", {3, 5}}, {"b", {5}, awayFromZero(0.5)}}},
      {"pow", OpKind::Pow, {{"a", {3, 5}, positive}, {"b", {3, 5}}}},
      {"pow broadcast exponent", OpKind::Pow, {{"a", {2, 3, 7}, positive}, {"b", {7}}}},
      {"max broadcast", OpKind::Max, {{"a", {2, 3, 7}}, {"b", {3, 1}}}},
      {"min broadcast", OpKind::Min, {{"a", {3, 5}}, {"b", {2, 3, 5}}}},
      {"where broadcast",
       OpKind::Where,
       {{"cond", {3, 5}, coin(), DType::Bool}, {"a", {3, 5}}, {"b", {5}}}},
      {"where condition broadcast",
       OpKind::Where,
       {{"cond", {2, 3, 5}, coin(), DType::Bool}, {"a", {3, 1}}, {"b", {}}}},

      {"reduce_sum", OpKind::ReduceSum, {{"x", {2, 3, 7}}}, {{"axes", v({0, 2})}}},
      {"reduce_sum keepdims negative",
       OpKind::ReduceSum,
       {{"x", {2, 3, 7}}},
       {{"axes", v({-1})}, {"keepdims", true}}},
      {"reduce_mean", OpKind::ReduceMean, {{"x", {2, 3, 7}}}, {{"axes", v({1})}}},
      {"reduce_mean keepdims",
       OpKind::ReduceMean,
       {{"x", {3, 5}}},
       {{"axes", v({0, -1})}, {"keepdims", true}}},
      {"reduce_max", OpKind::ReduceMax, {{"x", {2, 3, 7}}}, {{"axes", v({-1})}}},
      {"reduce_max keepdims",
       OpKind::ReduceMax,
       {{"x", {2, 3, 7}}},
       {{"axes", v({0, 2})}, {"keepdims", true}}},
      {"reduce_min", OpKind::ReduceMin, {{"x", {3, 5}}}, {{"axes", v({0})}}},
      {"reduce_prod",
       OpKind::ReduceProd,
       {{"x", {3, 5}, awayFromZero(0.5, 1.5)}},
       {{"axes", v({1})}}},
      {"reduce_prod keepdims",
       OpKind::ReduceProd,
       {{"x", {2, 3, 7}, awayFromZero(0.5, 1.5)}},
       {{"axes", v({0, -1})}, {"keepdims", true}}},
      {"global_avg_pool nchw", OpKind::GlobalAvgPool, {{"x", {2, 3, 4, 5}}}},
      {"global_avg_pool nhwc",
       OpKind::GlobalAvgPool,
       {{"x", {2, 3, 5, 3}}},
       {{"layout", std::string("nhwc")}}},

      {"matmul", OpKind::MatMul, {{"a", {3, 4}}, {"b", {4, 5}}}, {{"accumulate", DType::F64}}},
      {"matmul transpose_a batch",
       OpKind::MatMul,
       {{"a", {2, 4, 3}}, {"b", {4, 5}}},
       {{"accumulate", DType::F64}, {"transpose_a", true}}},
      {"matmul transpose_b",
       OpKind::MatMul,
       {{"a", {3, 4}}, {"b", {2, 5, 4}}},
       {{"accumulate", DType::F64}, {"transpose_b", true}}},
      {"matmul both transposed broadcast batch",
       OpKind::MatMul,
       {{"a", {2, 1, 4, 3}}, {"b", {3, 5, 4}}},
       {{"accumulate", DType::F64}, {"transpose_a", true}, {"transpose_b", true}}},

      // The window ops' full attribute grid is in WindowGradientsTest.cpp; one case each
      // here keeps this table's coverage check whole.
      {"conv2d nchw stride 2 asymmetric padding",
       OpKind::Conv2D,
       {{"x", {2, 3, 7, 5}}, {"w", {4, 3, 3, 3}}},
       {{"accumulate", DType::F64}, {"stride", v({2, 2})}, {"padding", v({1, 0, 1, 1})}}},
      {"conv2d nhwc groups 2 dilation 2",
       OpKind::Conv2D,
       {{"x", {1, 7, 6, 4}}, {"w", {4, 2, 2, 2}}},
       {{"accumulate", DType::F64},
        {"layout", std::string("nhwc")},
        {"groups", int64_t{2}},
        {"dilation", v({2, 2})}}},
      {"max_pool2d overlapping padded",
       OpKind::MaxPool2D,
       {{"x", {2, 2, 7, 5}}},
       {{"kernel", v({3, 3})}, {"stride", v({2, 2})}, {"padding", v({1, 1, 1, 1})}}},
      {"avg_pool2d padded",
       OpKind::AvgPool2D,
       {{"x", {2, 2, 6, 5}}},
       {{"kernel", v({2, 3})}, {"stride", v({1, 2})}, {"padding", v({1, 0, 0, 1})}}},

      {"softmax", OpKind::Softmax, {{"x", {2, 3, 7}}}},
      {"softmax axis 0", OpKind::Softmax, {{"x", {3, 5}}}, {{"axis", int64_t{0}}}},
      {"log_softmax", OpKind::LogSoftmax, {{"x", {3, 5}}}},
      {"log_softmax axis 1", OpKind::LogSoftmax, {{"x", {2, 3, 7}}}, {{"axis", int64_t{1}}}},
      {"layer_norm", OpKind::LayerNorm, {{"x", {2, 3, 7}}, {"scale", {7}}, {"bias", {7}}}},
      {"layer_norm two axes",
       OpKind::LayerNorm,
       {{"x", {2, 3, 5}}, {"scale", {3, 5}}, {"bias", {3, 5}}},
       {{"axis", int64_t{1}}, {"epsilon", 1e-3}}},
      {"batch_norm nchw",
       OpKind::BatchNorm,
       {{"x", {2, 3, 4, 5}}, {"scale", {3}}, {"bias", {3}}, {"mean", {3}}, {"var", {3}, positive}}},
      {"batch_norm channels last",
       OpKind::BatchNorm,
       {{"x", {3, 5}}, {"scale", {5}}, {"bias", {5}}, {"mean", {5}}, {"var", {5}, positive}},
       {{"axis", int64_t{-1}}, {"epsilon", 1e-2}}},
      {"attention",
       OpKind::ScaledDotProductAttention,
       {{"q", {2, 3, 4}}, {"k", {2, 5, 4}}, {"v", {2, 5, 6}}},
       {{"scale", 0.5}}},
      {"attention causal",
       OpKind::ScaledDotProductAttention,
       {{"q", {2, 3, 4}}, {"k", {2, 5, 4}}, {"v", {2, 5, 3}}},
       {{"scale", 0.7}, {"causal", true}}},
      {"attention additive mask",
       OpKind::ScaledDotProductAttention,
       {{"q", {2, 3, 4}}, {"k", {2, 5, 4}}, {"v", {2, 5, 3}}, {"mask", {3, 5}}},
       {{"scale", 0.6}, {"causal", true}}},

      {"reshape", OpKind::Reshape, {{"x", {3, 5}}}, {{"shape", v({5, 3})}}},
      {"transpose", OpKind::Transpose, {{"x", {2, 3, 7}}}, {{"perm", v({2, 0, 1})}}},
      {"broadcast_to", OpKind::BroadcastTo, {{"x", {3, 1}}}, {{"shape", v({2, 3, 5})}}},
      {"slice steps",
       OpKind::Slice,
       {{"x", {7, 9}}},
       {{"starts", v({1, -8})}, {"stops", v({6, 9})}, {"steps", v({2, 3})}}},
      {"slice clamped",
       OpKind::Slice,
       {{"x", {2, 3, 7}}},
       {{"starts", v({-5, 0, 2})}, {"stops", v({10, 2, -1})}, {"steps", v({1, 1, 4})}}},
      {"concat",
       OpKind::Concat,
       {{"a", {3, 2}}, {"b", {3, 5}}, {"c", {3, 1}}},
       {{"axis", int64_t{-1}}}},
      {"pad",
       OpKind::Pad,
       {{"x", {3, 5}}},
       {{"low", v({1, 0})}, {"high", v({0, 2})}, {"value", 0.5}}},
      {"gather embedding", OpKind::Gather, {{"data", {5, 3}}, indices("indices", {2, 4}, 5)}},
      {"gather axis 1",
       OpKind::Gather,
       {{"data", {2, 5, 3}}, indices("indices", {7}, 5)},
       {{"axis", int64_t{1}}}},
      {"take_along_axis",
       OpKind::TakeAlongAxis,
       {{"data", {3, 5}}, indices("indices", {3, 4}, 5)},
       {{"axis", int64_t{1}}}},
      {"take_along_axis axis 0",
       OpKind::TakeAlongAxis,
       {{"data", {3, 2, 5}}, indices("indices", {4, 2, 5}, 3)},
       {{"axis", int64_t{0}}}},
      {"squeeze", OpKind::Squeeze, {{"x", {3, 1, 5}}}, {{"axes", v({1})}}},
      {"unsqueeze", OpKind::Unsqueeze, {{"x", {3, 5}}}, {{"axes", v({0, 2})}}},
  };
  return list;
}

void runCase(const Case &c, uint64_t seed) {
  Rng rng(seed);
  NamedTensors values;
  std::vector<std::string> wrt;
  for (const Operand &operand : c.operands) {
    int64_t count = 1;
    for (int64_t dim : operand.shape)
      count *= dim;
    std::vector<double> data(static_cast<size_t>(count));
    for (double &x : data)
      x = operand.generate(rng);
    values[operand.name] = HostTensor::fromDoubles(operand.dtype, operand.shape, data);
    if (isFloatingPoint(operand.dtype))
      wrt.push_back(operand.name);
  }
  auto build = [&c](Graph &graph) -> Value * {
    std::vector<Value *> operands;
    for (const Operand &operand : c.operands) {
      auto input = graph.addInput(operand.name, TensorType{operand.dtype, operand.shape});
      REQUIRE(input);
      operands.push_back(*input);
    }
    auto y = graph.addNode(c.op, operands, c.attrs);
    if (!y)
      FAIL(y.error().str());
    return *y;
  };
  GradientCheckOptions options = c.options;
  options.seed = seed;
  checkGradients(c.label, build, values, wrt, options);
}

} // namespace

TEST_CASE("every gradient rule matches finite differences", "[autodiff][gradient-check]") {
  uint64_t seed = Catch::rngSeed() + 1;
  for (const Case &c : cases()) {
    DYNAMIC_SECTION(c.label) { runCase(c, seed); }
  }
}

TEST_CASE("every op with a gradient rule or a composite has a gradient check", "[autodiff][gradient-check]") {
  std::set<OpKind> covered;
  for (const Case &c : cases())
    covered.insert(c.op);
  for (const OpInfo &info : allOps()) {
    INFO(info.name);
    if (info.gradient == nullptr && !isCompositeElementwise(info)) {
      // The ops that may stay without a rule: those with non-float results or no operands.
      bool allowed = info.kind == OpKind::ArgMax || info.kind == OpKind::ArgMin ||
                     info.kind == OpKind::Iota || info.kind == OpKind::Constant ||
                     info.kind == OpKind::SymbolSize || info.kind == OpKind::Not ||
                     info.kind == OpKind::AllReduce || // placed on gradients after autodiff
                     info.kind == OpKind::And || info.kind == OpKind::Or ||
                     (info.kind >= OpKind::Eq && info.kind <= OpKind::Ge);
      CHECK(allowed);
      continue;
    }
    CHECK(covered.contains(info.kind));
  }
}
