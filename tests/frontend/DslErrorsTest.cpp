// DSL errors: a bad call neither crashes nor continues silently. The graph
// keeps the first error, whose text names the op, the shapes and this test
// file's exact line; later ops on the poisoned result are no-ops.
#include "frontend/DslTestUtil.h"
#include "frontend/Ops.h"
#include "frontend/nn/Layers.h"

#include <limits>

using namespace kiln;
using namespace kiln::dsltest;

TEST_CASE("a conv2d channel mismatch names the op, the shapes and the user's line",
          "[dsl][errors]") {
  Graph g;
  Tensor x = g.input("x", {8, 3, 28, 28});
  Tensor w = g.param("w", HostTensor(DType::F32, {32, 1, 3, 3}));
  const int line = __LINE__ + 1; // the next line
  Tensor y = conv2d(x, w);
  CHECK(y.poisoned());
  REQUIRE(g.error().has_value());
  CHECK(g.error()->code() == ErrorCode::ShapeMismatch);
  std::string message = firstError(g);
  CHECK_THAT(message, Catch::StartsWith(std::string(__FILE__) + ":" + std::to_string(line) + ":"));
  CHECK_THAT(message, Catch::Contains("DslErrorsTest.cpp:" + std::to_string(line) + ":"));
  CHECK_THAT(message, Catch::Contains("conv2d: input has 3 channels, filter expects 1"));
  CHECK_THAT(message, Catch::Contains("f32[8,3,28,28]"));
  CHECK_THAT(message, Catch::Contains("[32,1,3,3]"));
}

TEST_CASE("an operator's error names the line of the expression", "[dsl][errors]") {
  Graph g;
  Tensor a = g.input("a", {2, 3});
  Tensor b = g.input("b", {4});
  const int line = __LINE__ + 1; // the next line
  Tensor c = a + b;
  CHECK(c.poisoned());
  std::string message = firstError(g);
  CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
  CHECK_THAT(message, Catch::Contains("add"));
  CHECK_THAT(message, Catch::Contains("[2,3]"));
  CHECK_THAT(message, Catch::Contains("[4]"));
}

TEST_CASE("ops on a poisoned tensor are no-ops and only the first error is kept", "[dsl][errors]") {
  Graph g;
  Tensor a = g.input("a", {2, 3});
  Tensor b = g.input("b", {5, 7});
  const int line = __LINE__ + 1; // the next line
  Tensor bad = matmul(a, b);
  size_t nodesAfterError = g.ir().numNodes();
  Tensor worse = softmax(relu(bad * 2.0) + a);
  CHECK(worse.poisoned());
  CHECK(g.ir().numNodes() == nodesAfterError);
  CHECK(g.errorCount() == 1);
  g.output("y", worse); // consuming a poisoned tensor adds nothing
  CHECK(g.ir().outputs().empty());
  CHECK(g.errorCount() == 1);

  // A second, independent mistake is counted but does not replace the first.
  Tensor other = g.input("other", {3});
  Tensor alsoBad = reshape(other, {4});
  CHECK(alsoBad.poisoned());
  CHECK(g.errorCount() == 2);
  std::string message = firstError(g);
  CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
  CHECK_THAT(message, Catch::Contains("matmul"));
  CHECK_THAT(message, Catch::Contains("1 later DSL call also failed"));
}

TEST_CASE("reshape's -1 errors are reported by the DSL with the line", "[dsl][errors]") {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  const int line = __LINE__ + 1; // the next line
  Tensor y = reshape(x, {4, -1});
  CHECK(y.poisoned());
  std::string message = firstError(g);
  CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
  CHECK_THAT(message,
             Catch::Contains("reshape: cannot infer the -1 in [4,-1]: f32[2,3] has 6 elements, "
                             "not a multiple of 4"));

  Graph h;
  Tensor z = h.input("z", {2, 3});
  const int twoLine = __LINE__ + 1; // the next line
  reshape(z, {-1, -1});
  CHECK_THAT(firstError(h), Catch::Contains(fileLine(__FILE__, twoLine)));
  CHECK_THAT(firstError(h), Catch::Contains("at most one -1"));
}

TEST_CASE("duplicate names are errors at the line that reuses them", "[dsl][errors]") {
  Graph g;
  g.input("x", {2});
  const int inputLine = __LINE__ + 1; // the next line
  Tensor again = g.input("x", {3});
  CHECK(again.poisoned());
  CHECK_THAT(firstError(g), Catch::Contains(fileLine(__FILE__, inputLine)));
  CHECK_THAT(firstError(g), Catch::Contains("'x' is already used"));

  Graph h;
  Tensor w = h.param("w", HostTensor(DType::F32, {2}));
  const int paramLine = __LINE__ + 1; // the next line
  h.param("w", HostTensor(DType::F32, {2}));
  CHECK_THAT(firstError(h), Catch::Contains(fileLine(__FILE__, paramLine)));

  Graph k;
  Tensor v = k.input("v", {2});
  k.output("y", v);
  const int outputLine = __LINE__ + 1; // the next line
  k.output("y", relu(v));
  CHECK_THAT(firstError(k), Catch::Contains(fileLine(__FILE__, outputLine)));
  CHECK_THAT(firstError(k), Catch::Contains("output name 'y' is already used"));
  (void)w;
}

TEST_CASE("empty tensors and tensors of another graph are errors", "[dsl][errors]") {
  Graph g("first");
  Graph other("second");
  Tensor x = g.input("x", {2});
  Tensor foreign = other.input("y", {2});
  const int line = __LINE__ + 1; // the next line
  Tensor mixed = x + foreign;
  CHECK(mixed.poisoned());
  CHECK_THAT(firstError(g), Catch::Contains(fileLine(__FILE__, line)));
  CHECK_THAT(firstError(g), Catch::Contains("operand 1 belongs to graph 'second', not 'first'"));
  CHECK_FALSE(other.hasError());

  Graph h;
  Tensor empty;
  CHECK(empty.empty());
  CHECK(relu(empty).empty());          // no graph to record in: stays empty
  const int outputLine = __LINE__ + 1; // the next line
  h.output("y", relu(empty));
  CHECK_THAT(firstError(h), Catch::Contains(fileLine(__FILE__, outputLine)));
  CHECK_THAT(firstError(h), Catch::Contains("output 'y': the Tensor is empty"));
}

TEST_CASE("a layer's error names the line of the layer call", "[dsl][errors][nn]") {
  Graph g;
  Tensor x = g.input("x", {5});
  nn::Dense dense(4);
  const int line = __LINE__ + 1; // the next line
  Tensor y = dense(g, x);
  CHECK(y.poisoned());
  std::string message = firstError(g);
  CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
  CHECK_THAT(message, Catch::Contains("dense 'dense': input must have rank >= 2"));
  CHECK_THAT(message, Catch::Contains("f32[5]"));

  // An op inside a layer that fails also points at the layer call.
  Graph h;
  Tensor images = h.input("images", {1, 3, 8, 8});
  nn::Conv2D conv(4, {3, 3}, nn::Activation::Relu);
  Tensor features = conv(h, images);
  Tensor wrongChannels = h.input("gray", {1, 1, 8, 8});
  const int reuseLine = __LINE__ + 1; // the next line
  Tensor reused = conv(h, wrongChannels);
  CHECK(features.ok());
  CHECK(reused.poisoned());
  CHECK_THAT(firstError(h), Catch::Contains(fileLine(__FILE__, reuseLine)));
  CHECK_THAT(firstError(h), Catch::Contains("'weight' was created as f32[4,3,3,3]"));
}

TEST_CASE("finalize requires an output and evaluate refuses a graph with errors", "[dsl][errors]") {
  Graph g("no_outputs");
  relu(g.input("x", {2}));
  CHECK_THAT(firstError(g), Catch::Contains("graph 'no_outputs' has no outputs"));

  Graph h;
  Tensor x = h.input("x", {2});
  h.output("y", x + h.input("z", {3}));
  auto result = evaluate(h, {{"x", HostTensor(DType::F32, {2})}});
  REQUIRE_FALSE(result.has_value());
  CHECK_THAT(result.error().str(), Catch::Contains("DslErrorsTest.cpp"));
}

TEST_CASE("a parameter too large to build is a layer error instead of an abort",
          "[dsl][errors][nn]") {
  SECTION("larger than the machine's memory: 32 TiB of f32") {
    Graph g;
    Tensor x = g.input("x", {1, 8});
    const int line = __LINE__ + 1; // the next line
    Tensor y = nn::Dense(int64_t{1} << 40)(g, x);
    CHECK(y.poisoned());
    CHECK(g.paramValues().empty());
    std::string message = firstError(g);
    CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
    CHECK_THAT(message, Catch::Contains("dense 'dense': parameter 'weight': cannot allocate tensor "
                                        "f32[8,1099511627776]: it needs 32.0 TiB "
                                        "(35184372088832 bytes), more than the "));
  }
  SECTION("more than 2^53 elements") {
    Graph g;
    Tensor x = g.input("x", {1, 16});
    const int line = __LINE__ + 1; // the next line
    nn::Dense(int64_t{1} << 50)(g, x);
    std::string message = firstError(g);
    CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
    CHECK_THAT(message, Catch::Contains("dense 'dense': parameter 'weight': cannot make tensor "
                                        "f32[16,1125899906842624]: it has more than 2^53 "
                                        "elements"));
  }
  SECTION("a Conv2D kernel whose fans would overflow") {
    Graph g;
    Tensor x = g.input("x", {1, 3, 8, 8});
    const int64_t huge = int64_t{1} << 40;
    nn::Conv2D(nn::Conv2DConfig{.filters = 4, .kernel = {huge, huge}})(g, x);
    CHECK_THAT(firstError(g), Catch::Contains("conv2d 'conv2d': parameter 'weight': cannot make "
                                              "tensor f32[4,3,1099511627776,1099511627776]: it has "
                                              "more than 2^53 elements"));
  }
}

TEST_CASE("an initializer must return the requested dtype and shape", "[dsl][errors][nn]") {
  Graph g;
  Tensor x = g.input("x", {2, 4});
  nn::Initializer wrongShape = [](DType dtype, const Shape &, nn::Fans, Rng &) {
    return HostTensor(dtype, {2});
  };
  const int line = __LINE__ + 1; // the next line
  Tensor y = nn::Dense(nn::DenseConfig{.units = 3, .kernelInitializer = wrongShape})(g, x);
  CHECK(y.poisoned());
  std::string message = firstError(g);
  CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
  CHECK_THAT(message, Catch::Contains("dense 'dense': the initializer of parameter 'weight' "
                                      "returned f32[2], but the layer asked for f32[4,3]"));

  Graph h;
  Tensor z = h.input("z", {2, 4});
  nn::Initializer wrongDType = [](DType, const Shape &shape, nn::Fans, Rng &) {
    return HostTensor(DType::F64, shape);
  };
  nn::Dense(nn::DenseConfig{.units = 3, .biasInitializer = wrongDType})(h, z);
  CHECK_THAT(firstError(h), Catch::Contains("the initializer of parameter 'bias' returned f64[3], "
                                            "but the layer asked for f32[3]"));
}

TEST_CASE("configuration sizes whose arithmetic would overflow are DSL errors", "[dsl][errors]") {
  constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  SECTION("reshape's -1 with a product past int64") {
    Graph g;
    Tensor x = g.input("x", {2, 3});
    const int line = __LINE__ + 1; // the next line
    Tensor y = reshape(x, {int64_t{1} << 40, int64_t{1} << 40, -1});
    CHECK(y.poisoned());
    std::string message = firstError(g);
    CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
    CHECK_THAT(message, Catch::Contains("reshape: cannot infer the -1 in "
                                        "[1099511627776,1099511627776,-1]: the other sizes "
                                        "multiply to more than 2^53, and f32[2,3] has 6 elements"));
    // A zero among the other sizes still reads as "a multiple of 0".
    Graph h;
    reshape(h.input("x", {2, 3}), {kInt64Max, 0, -1});
    CHECK_THAT(firstError(h), Catch::Contains("not a multiple of 0"));
  }
  SECTION("\"same\" padding with a huge dilation") {
    Graph g;
    Tensor x = g.input("x", {1, 3, 8, 8});
    Tensor w = g.param("w", HostTensor(DType::F32, {4, 3, 3, 3}));
    const int line = __LINE__ + 1; // the next line
    Tensor y = conv2d(x, w, {.padding = Padding::same(), .dilation = {1, kInt64Max}});
    CHECK(y.poisoned());
    std::string message = firstError(g);
    CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
    CHECK_THAT(message, Catch::Contains("conv2d: \"same\" padding cannot be computed: along the "
                                        "width the window of 3 with dilation "
                                        "9223372036854775807 spans more than 2^53 elements"));
  }
  SECTION("\"same\" padding with a huge stride is no error of its own") {
    // ceil(8 / stride) once overflowed computing 8 + stride - 1; now the
    // padding resolves and shape inference judges the stride.
    Graph g;
    Tensor x = g.input("x", {1, 3, 8, 8});
    Tensor y =
        maxPool2d(x, {.kernel = {2, 2}, .stride = {2, kInt64Max}, .padding = Padding::same()});
    CHECK(y.poisoned());
    CHECK_THAT(firstError(g), Catch::Contains("max_pool2d") && Catch::Contains("stride"));
  }
  SECTION("LSTM units whose four gates overflow") {
    Graph g;
    Tensor x = g.input("x", {1, 2, 3});
    const int line = __LINE__ + 1; // the next line
    nn::LSTM(int64_t{1} << 62)(g, x);
    std::string message = firstError(g);
    CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
    CHECK_THAT(message, Catch::Contains("lstm 'lstm': units must be in [1, 2^53 / 4] (the 4 gates "
                                        "are stacked along one axis), got 4611686018427387904"));
  }
  SECTION("attention heads whose width overflows") {
    Graph g;
    Tensor x = g.input("x", {1, 2, 4});
    // The product numHeads * keyDim is 2^80: the constructor must not compute it.
    nn::MultiHeadAttention attention(int64_t{1} << 40, int64_t{1} << 40);
    const int line = __LINE__ + 1; // the next line
    attention(g, x);
    std::string message = firstError(g);
    CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
    CHECK_THAT(message, Catch::Contains("multi_head_attention 'multi_head_attention': numHeads * "
                                        "keyDim (1099511627776 * 1099511627776)"));
    Graph h;
    nn::MultiHeadAttention(nn::MultiHeadAttentionConfig{
        .numHeads = 2, .keyDim = 2, .valueDim = -1})(h, h.input("x", {1, 2, 4}));
    CHECK_THAT(firstError(h), Catch::Contains("valueDim (-1) and outputDim (0) must be positive"));
  }
}
