// The nn layers: output shapes, parameter names and flags, automatic unique
// names, weight sharing, and values against hand computations (Dense, an
// LSTM in fp64, Conv2D's bias, BatchNorm, Embedding, attention's causality).
#include "frontend/DslTestUtil.h"
#include "frontend/Ops.h"
#include "frontend/nn/Layers.h"

#include <algorithm>
#include <cmath>
#include <functional>

using namespace kiln;
using namespace kiln::dsltest;
using namespace kiln::nn;

namespace {

HostTensor f32(Shape shape, std::vector<double> values) {
  return HostTensor::fromDoubles(DType::F32, std::move(shape), values);
}

std::vector<std::string> paramNames(const Graph &g) {
  std::vector<std::string> names;
  for (const ir::Value *param : g.ir().params())
    names.push_back(param->name());
  return names;
}

double sigmoidRef(double x) { return 1.0 / (1.0 + std::exp(-x)); }

} // namespace

TEST_CASE("Dense computes relu(x @ weight + bias) by hand", "[nn][dense]") {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  Tensor y = Dense(4, Activation::Relu)(g, x);
  CHECK(y.str() == "f32[2,4]");
  CHECK(paramNames(g) == std::vector<std::string>{"dense.weight", "dense.bias"});
  g.output("y", y);
  REQUIRE(g.setParamValue("dense.weight", f32({3, 4}, {1, 0, -1, 2, 0, 1, 1, -1, 1, 1, 0, 0.5})));
  REQUIRE(g.setParamValue("dense.bias", f32({4}, {0.5, -1, 0, 1})));
  NamedTensors out = run(g, {{"x", f32({2, 3}, {1, 2, 3, -1, 0, 1})}});
  // Row 0: [1+3, 2+3, -1+2, 2-2+1.5] + b = [4.5, 4, 1, 2.5].
  // Row 1: [-1+1, 1, 1, -2+0.5] + b = [0.5, 0, 1, -0.5] -> relu.
  CHECK(out.at("y").toDoubles() == std::vector<double>{4.5, 4, 1, 2.5, 0.5, 0, 1, 0});
}

TEST_CASE("Dense maps the last axis of higher-rank inputs and can drop the bias", "[nn][dense]") {
  Graph g;
  Tensor y =
      Dense(DenseConfig{.units = 7, .useBias = false, .name = "proj"})(g, g.input("x", {2, 5, 3}));
  CHECK(y.str() == "f32[2,5,7]");
  CHECK(paramNames(g) == std::vector<std::string>{"proj.weight"});
  CHECK(g.paramValues().at("proj.weight").typeStr() == "f32[3,7]");
}

TEST_CASE("layers get unique automatic names and share weights when reused", "[nn][names]") {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  Dense shared(3);
  Tensor once = shared(g, x);
  Tensor twice = shared(g, once); // same parameters again
  Tensor other = Dense(5)(g, twice);
  Tensor third = Dense(2, Activation::Linear, true, "head")(g, other);
  Tensor fourth = Dense(2)(g, third);
  CHECK(paramNames(g) == std::vector<std::string>{"dense.weight", "dense.bias", "dense_1.weight",
                                                  "dense_1.bias", "head.weight", "head.bias",
                                                  "dense_2.weight", "dense_2.bias"});
  CHECK(shared.name() == "dense");
  CHECK(nodeOf(once)->operand(0)->definingNode()->operand(1) ==
        nodeOf(twice)->operand(0)->definingNode()->operand(1));
  CHECK(fourth.str() == "f32[2,2]");

  // Name scopes prefix parameter names; layer names are unique per scope.
  {
    auto scope = g.nameScope("encoder");
    Dense(2)(g, x);
  }
  CHECK(g.ir().findParam("encoder.dense.weight") != nullptr);
  CHECK_FALSE(g.hasError());
}

TEST_CASE("Sequential names its layers in the enclosing scope", "[nn][sequential]") {
  Graph g;
  Sequential model(Dense(8, Activation::Tanh), Dropout(0.5), Dense(3, Activation::Softmax));
  CHECK(model.size() == 3);
  Tensor y = model(g, g.input("x", {4, 6}));
  CHECK(y.str() == "f32[4,3]");
  CHECK(paramNames(g) ==
        std::vector<std::string>{"dense.weight", "dense.bias", "dense_1.weight", "dense_1.bias"});
  CHECK(nodeOf(y)->kind() == ir::OpKind::Softmax);
}

TEST_CASE("Conv2D output shapes, parameter layouts and bias broadcast", "[nn][conv]") {
  Graph g;
  Tensor x = g.input("x", {2, 3, 10, 10});
  CHECK(Conv2D(4, {3, 3}, Activation::Relu)(g, x).str() == "f32[2,4,8,8]");
  CHECK(Conv2D(4, {3, 3}, Activation::Linear, Padding::same(), {2, 2})(g, x).str() ==
        "f32[2,4,5,5]");
  CHECK(g.paramValues().at("conv2d.weight").typeStr() == "f32[4,3,3,3]");
  CHECK(g.paramValues().at("conv2d.bias").typeStr() == "f32[4]");
  Tensor xNhwc = g.input("x_nhwc", {2, 10, 10, 3});
  Tensor yNhwc = Conv2D(5, {3, 1}, Activation::Linear, Padding::valid(), {1, 1}, Layout::NHWC,
                        "conv_nhwc")(g, xNhwc);
  CHECK(yNhwc.str() == "f32[2,8,10,5]");
  CHECK(g.paramValues().at("conv_nhwc.weight").typeStr() == "f32[5,3,1,3]");
  CHECK_FALSE(g.hasError());

  // A 1x1 convolution with weight [2, -1] and bias 0.5 is 2*c0 - c1 + 0.5 per pixel.
  Graph h;
  Tensor image = h.input("image", {1, 2, 1, 3});
  h.output("y", Conv2D(1, {1, 1})(h, image));
  REQUIRE(h.setParamValue("conv2d.weight", f32({1, 2, 1, 1}, {2, -1})));
  REQUIRE(h.setParamValue("conv2d.bias", f32({1}, {0.5})));
  NamedTensors out = run(h, {{"image", f32({1, 2, 1, 3}, {1, 2, 3, 4, 0, -1})}});
  CHECK(out.at("y").toDoubles() == std::vector<double>{-1.5, 4.5, 7.5});
}

TEST_CASE("pooling and flatten layers", "[nn][pool]") {
  Graph g;
  Tensor x = g.input("x", {2, 3, 7, 7});
  CHECK(MaxPool2D()(g, x).str() == "f32[2,3,3,3]");
  CHECK(MaxPool2D({.padding = Padding::same()})(g, x).str() == "f32[2,3,4,4]");
  CHECK(MaxPool2D({.pool = {3, 2}})(g, x).str() == "f32[2,3,2,3]");
  CHECK(MaxPool2D(3, 1, Padding::same())(g, x).str() == "f32[2,3,7,7]");
  CHECK(AvgPool2D(3, 1)(g, x).str() == "f32[2,3,5,5]");
  CHECK(Flatten()(g, x).str() == "f32[2,147]");
  CHECK(g.ir().params().empty());
  CHECK_FALSE(g.hasError());

  Graph h;
  Tensor small = h.input("small", {1, 1, 2, 4});
  h.output("max", MaxPool2D()(h, small));
  h.output("avg", AvgPool2D({.pool = {1, 2}})(h, small));
  NamedTensors out = run(h, {{"small", f32({1, 1, 2, 4}, {1, 5, 2, 0, -3, 4, 8, 7})}});
  CHECK(out.at("max").toDoubles() == std::vector<double>{5, 8});
  CHECK(out.at("avg").toDoubles() == std::vector<double>{3, 1, 0.5, 7.5});
  // One class template makes both layers; each keeps its own automatic name.
  CHECK(MaxPool2D().baseName() == "max_pool2d");
  CHECK(AvgPool2D().baseName() == "avg_pool2d");
}

TEST_CASE("Embedding looks up rows of its table", "[nn][embedding]") {
  Graph g;
  Tensor ids = g.input("ids", {2, 2}, DType::I64);
  Tensor vectors = Embedding(5, 3)(g, ids);
  CHECK(vectors.str() == "f32[2,2,3]");
  g.output("vectors", vectors);
  const HostTensor &table = g.paramValues().at("embedding.weight");
  CHECK(table.typeStr() == "f32[5,3]");
  for (double value : table.toDoubles())
    CHECK(std::abs(value) <= 0.05);
  NamedTensors out = run(
      g, {{"ids", HostTensor::fromDoubles(DType::I64, {2, 2}, std::vector<double>{4, 0, 0, 2})}});
  std::vector<double> rows = out.at("vectors").toDoubles();
  std::vector<double> expected;
  for (int64_t id : {4, 0, 0, 2})
    for (int64_t j = 0; j < 3; ++j)
      expected.push_back(table.getDouble(id * 3 + j));
  CHECK(rows == expected);

  Graph h;
  const int line = __LINE__ + 1; // the next line
  Embedding(5, 3)(h, h.input("floats", {2}));
  CHECK_THAT(firstError(h), Catch::Contains(fileLine(__FILE__, line)));
  CHECK_THAT(firstError(h), Catch::Contains("ids must have an integer dtype"));
}

TEST_CASE("an LSTM matches the gate equations computed by hand in fp64", "[nn][lstm]") {
  const int64_t batch = 2, steps = 3, features = 2, units = 3;
  Graph g("lstm", 7);
  Tensor x = g.input("x", {batch, steps, features}, DType::F64);
  LSTM lstm(units, /*returnSequences=*/true);
  Tensor sequence = lstm(g, x);
  CHECK(sequence.str() == "f64[2,3,3]");
  CHECK(paramNames(g) ==
        std::vector<std::string>{"lstm.weight", "lstm.recurrent_weight", "lstm.bias"});
  g.output("sequence", sequence);
  // The forget gate's bias starts at 1, the others at 0.
  CHECK(g.paramValues().at("lstm.bias").toDoubles() ==
        std::vector<double>{0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0});

  Rng rng(99);
  HostTensor bias = HostTensor::randomUniform(DType::F64, {4 * units}, rng);
  REQUIRE(g.setParamValue("lstm.bias", bias));
  HostTensor input = HostTensor::randomUniform(DType::F64, {batch, steps, features}, rng, -2, 2);
  NamedTensors out = run(g, {{"x", input}});
  const HostTensor &kernel = g.paramValues().at("lstm.weight");
  const HostTensor &recurrent = g.paramValues().at("lstm.recurrent_weight");

  std::vector<double> expected;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> h(units, 0.0), c(units, 0.0);
    std::vector<std::vector<double>> perStep;
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<double> z(4 * units);
      for (int64_t j = 0; j < 4 * units; ++j) {
        z[j] = bias.getDouble(j);
        for (int64_t f = 0; f < features; ++f)
          z[j] +=
              input.getDouble((b * steps + t) * features + f) * kernel.getDouble(f * 4 * units + j);
        for (int64_t u = 0; u < units; ++u)
          z[j] += h[u] * recurrent.getDouble(u * 4 * units + j);
      }
      for (int64_t u = 0; u < units; ++u) {
        double i = sigmoidRef(z[u]);
        double f = sigmoidRef(z[units + u]);
        double candidate = std::tanh(z[2 * units + u]);
        double o = sigmoidRef(z[3 * units + u]);
        c[u] = f * c[u] + i * candidate;
        h[u] = o * std::tanh(c[u]);
      }
      expected.insert(expected.end(), h.begin(), h.end());
    }
  }
  std::vector<double> actual = out.at("sequence").toDoubles();
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    CHECK(actual[i] == Approx(expected[i]).margin(1e-12));

  // Without returnSequences the result is the last step's hidden state.
  Graph last("lstm", 7);
  Tensor final = LSTM(units)(last, last.input("x", {batch, steps, features}, DType::F64));
  CHECK(final.str() == "f64[2,3]");
  last.output("h", final);
  REQUIRE(last.setParamValue("lstm.bias", bias));
  std::vector<double> lastStep = run(last, {{"x", input}}).at("h").toDoubles();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t u = 0; u < units; ++u)
      CHECK(lastStep[b * units + u] ==
            Approx(expected[(b * steps + steps - 1) * units + u]).margin(1e-12));
}

TEST_CASE("LayerNorm and BatchNorm parameters, flags and values", "[nn][norm]") {
  Graph g;
  Tensor x = g.input("x", {2, 4});
  Tensor normalized = LayerNorm()(g, x);
  g.output("normalized", normalized);
  CHECK(paramNames(g) == std::vector<std::string>{"layer_norm.weight", "layer_norm.bias"});
  NamedTensors out = run(g, {{"x", f32({2, 4}, {1, 2, 3, 4, -1, -1, 1, 1})}});
  // Row 0: mean 2.5, variance 1.25; row 1: mean 0, variance 1.
  std::vector<double> expected{-1.5, -0.5, 0.5, 1.5, -1, -1, 1, 1};
  std::vector<double> actual = out.at("normalized").toDoubles();
  for (size_t i = 0; i < 4; ++i)
    CHECK(actual[i] == Approx(expected[i] / std::sqrt(1.25 + 1e-5)).epsilon(1e-6));
  for (size_t i = 4; i < 8; ++i)
    CHECK(actual[i] == Approx(expected[i] / std::sqrt(1.0 + 1e-5)).epsilon(1e-6));

  Graph h;
  Tensor image = h.input("image", {1, 2, 1, 2});
  h.output("y", BatchNorm()(h, image));
  CHECK(h.trainableParamNames() ==
        std::vector<std::string>{"batch_norm.weight", "batch_norm.bias"});
  CHECK(h.frozenParamNames() ==
        std::vector<std::string>{"batch_norm.running_mean", "batch_norm.running_var"});
  CHECK_FALSE(h.isTrainable("batch_norm.running_var"));
  REQUIRE(h.setParamValue("batch_norm.weight", f32({2}, {2, 1})));
  REQUIRE(h.setParamValue("batch_norm.bias", f32({2}, {0, 10})));
  REQUIRE(h.setParamValue("batch_norm.running_mean", f32({2}, {1, -1})));
  REQUIRE(h.setParamValue("batch_norm.running_var", f32({2}, {4 - 1e-5, 0.25 - 1e-5})));
  std::vector<double> y = run(h, {{"image", f32({1, 2, 1, 2}, {3, 5, 0, -2})}}).at("y").toDoubles();
  // Channel 0: (x - 1) / 2 * 2; channel 1: (x + 1) / 0.5 + 10.
  std::vector<double> want{2, 4, 12, 8};
  for (size_t i = 0; i < 4; ++i)
    CHECK(y[i] == Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("MultiHeadAttention shapes, parameters and causality", "[nn][attention]") {
  Graph g("attention", 3);
  Tensor x = g.input("x", {2, 5, 8});
  MultiHeadAttention causal(2, 4, /*causal=*/true);
  Tensor y = causal(g, x);
  CHECK(y.str() == "f32[2,5,8]");
  CHECK(paramNames(g) == std::vector<std::string>{
                             "multi_head_attention.query.weight", "multi_head_attention.query.bias",
                             "multi_head_attention.key.weight", "multi_head_attention.key.bias",
                             "multi_head_attention.value.weight", "multi_head_attention.value.bias",
                             "multi_head_attention.output.weight",
                             "multi_head_attention.output.bias"});
  Tensor memory = g.input("memory", {2, 7, 8});
  MultiHeadAttention cross(
      MultiHeadAttentionConfig{.numHeads = 4, .keyDim = 3, .valueDim = 5, .outputDim = 6});
  CHECK(cross(g, x, memory).str() == "f32[2,5,6]");
  g.output("y", y);
  g.output("cross", cross(g, x, memory));
  CHECK(g.paramValues().at("multi_head_attention_1.value.weight").typeStr() == "f32[8,20]");

  // With a causal mask, position 0 sees only token 0: changing the later
  // tokens leaves its output unchanged but changes the last position's.
  HostTensor a = randomF32({2, 5, 8}, 1);
  HostTensor b = a;
  for (int64_t batch = 0; batch < 2; ++batch)
    for (int64_t i = 8; i < 40; ++i)
      b.setDouble(batch * 40 + i, -a.getDouble(batch * 40 + i) + 0.25);
  HostTensor mem = randomF32({2, 7, 8}, 2);
  std::vector<double> ya = run(g, {{"x", a}, {"memory", mem}}).at("y").toDoubles();
  std::vector<double> yb = run(g, {{"x", b}, {"memory", mem}}).at("y").toDoubles();
  for (int64_t batch = 0; batch < 2; ++batch) {
    for (int64_t i = 0; i < 8; ++i)
      CHECK(ya[batch * 40 + i] == yb[batch * 40 + i]);
    double lastDifference = 0;
    for (int64_t i = 32; i < 40; ++i)
      lastDifference += std::abs(ya[batch * 40 + i] - yb[batch * 40 + i]);
    CHECK(lastDifference > 1e-3);
  }
}

namespace {

/// Row-major [rows, cols] matrix of fp64 values.
using Matrix = std::vector<std::vector<double>>;

Matrix affine(const Matrix &x, const HostTensor &weight, const HostTensor &bias) {
  size_t inputs = weight.shape()[0], outputs = weight.shape()[1];
  Matrix y(x.size(), std::vector<double>(outputs));
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = 0; j < outputs; ++j) {
      double sum = bias.getDouble(static_cast<int64_t>(j));
      for (size_t k = 0; k < inputs; ++k)
        sum += x[i][k] * weight.getDouble(static_cast<int64_t>(k * outputs + j));
      y[i][j] = sum;
    }
  return y;
}

/// Multi-head self-attention by its definition. `columnOf(h, d)` is the
/// projection column that holds position d of head h, so the test can also
/// compute the wrong splits it must tell apart.
Matrix attentionByHand(const Matrix &x, const NamedTensors &params, int64_t heads, int64_t depth,
                       double scale, const std::function<size_t(size_t, size_t)> &columnOf) {
  auto p = [&](const std::string &name) -> const HostTensor & {
    return params.at("multi_head_attention." + name);
  };
  Matrix q = affine(x, p("query.weight"), p("query.bias"));
  Matrix k = affine(x, p("key.weight"), p("key.bias"));
  Matrix v = affine(x, p("value.weight"), p("value.bias"));
  size_t length = x.size();
  Matrix merged(length, std::vector<double>(static_cast<size_t>(heads * depth)));
  for (size_t h = 0; h < static_cast<size_t>(heads); ++h) {
    for (size_t i = 0; i < length; ++i) {
      std::vector<double> weights(length);
      double total = 0;
      for (size_t j = 0; j < length; ++j) {
        double score = 0;
        for (size_t d = 0; d < static_cast<size_t>(depth); ++d)
          score += q[i][columnOf(h, d)] * k[j][columnOf(h, d)];
        weights[j] = std::exp(score * scale);
        total += weights[j];
      }
      for (size_t d = 0; d < static_cast<size_t>(depth); ++d) {
        double sum = 0;
        for (size_t j = 0; j < length; ++j)
          sum += weights[j] / total * v[j][columnOf(h, d)];
        merged[i][columnOf(h, d)] = sum;
      }
    }
  }
  return affine(merged, p("output.weight"), p("output.bias"));
}

} // namespace

TEST_CASE("MultiHeadAttention matches attention computed by hand in fp64", "[nn][attention]") {
  // 2 heads of depth 2 over d_model 4, sequence 3, in f64 so the reference
  // interpreter and the hand computation agree to rounding.
  Graph g("mha", 11);
  Tensor x = g.input("x", {1, 3, 4}, DType::F64);
  g.output("y", MultiHeadAttention(2, 2)(g, x));
  // Biases are zero-initialized: make them random too, so they count.
  Rng rng(5);
  for (const char *bias : {"query.bias", "key.bias", "value.bias", "output.bias"})
    REQUIRE(g.setParamValue(std::string("multi_head_attention.") + bias,
                            HostTensor::randomUniform(DType::F64, {4}, rng)));
  for (const auto &[name, value] : g.paramValues())
    CHECK(value.dtype() == DType::F64);
  HostTensor input = HostTensor::randomUniform(DType::F64, {1, 3, 4}, rng, -2.0, 2.0);
  Matrix rows(3, std::vector<double>(4));
  for (size_t i = 0; i < 3; ++i)
    for (size_t c = 0; c < 4; ++c)
      rows[i][c] = input.getDouble(static_cast<int64_t>(i * 4 + c));

  // Head h owns the contiguous columns [h * depth, (h + 1) * depth), as in
  // Keras and PyTorch; the scale is 1 / sqrt(depth).
  auto contiguous = [](size_t h, size_t d) { return h * 2 + d; };
  Matrix expected = attentionByHand(rows, g.paramValues(), 2, 2, 1 / std::sqrt(2.0), contiguous);
  // What a wrong split (interleaved heads) or a wrong scale (1 / sqrt(d_model))
  // would give: the inputs are chosen so both differ visibly.
  auto interleaved = [](size_t h, size_t d) { return d * 2 + h; };
  Matrix wrongSplit = attentionByHand(rows, g.paramValues(), 2, 2, 1 / std::sqrt(2.0), interleaved);
  Matrix wrongScale = attentionByHand(rows, g.paramValues(), 2, 2, 0.5, contiguous);

  std::vector<double> actual = run(g, {{"x", input}}).at("y").toDoubles();
  REQUIRE(actual.size() == 12);
  double splitGap = 0, scaleGap = 0;
  for (size_t i = 0; i < 3; ++i)
    for (size_t c = 0; c < 4; ++c) {
      CHECK(actual[i * 4 + c] == Approx(expected[i][c]).epsilon(1e-12).margin(1e-12));
      splitGap = std::max(splitGap, std::abs(wrongSplit[i][c] - expected[i][c]));
      scaleGap = std::max(scaleGap, std::abs(wrongScale[i][c] - expected[i][c]));
    }
  CHECK(splitGap > 1e-3);
  CHECK(scaleGap > 1e-3);
}

TEST_CASE("Dropout is the identity at inference and checks its rate", "[nn][dropout]") {
  Graph g;
  Tensor x = g.input("x", {3});
  Tensor y = Dropout(0.25)(g, x);
  CHECK(y.value() == x.value());
  CHECK(g.ir().numNodes() == 0);
  const int line = __LINE__ + 1; // the next line
  Dropout(1.5)(g, x);
  CHECK_THAT(firstError(g), Catch::Contains(fileLine(__FILE__, line)));
  CHECK_THAT(firstError(g), Catch::Contains("rate must be in [0, 1), got 1.5"));
}

TEST_CASE("setTrainable(false) freezes a layer's parameters", "[nn][frozen]") {
  Graph g;
  Tensor x = g.input("x", {1, 4});
  Dense frozen(3);
  frozen.setTrainable(false);
  Tensor y = Dense(2)(g, frozen(g, x));
  CHECK(y.ok());
  CHECK(g.frozenParamNames() == std::vector<std::string>{"dense.weight", "dense.bias"});
  CHECK(g.trainableParamNames() == std::vector<std::string>{"dense_1.weight", "dense_1.bias"});
}
