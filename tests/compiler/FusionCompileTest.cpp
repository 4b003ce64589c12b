// End-to-end tests of every fusion pattern: the fused kernels must compute
// what the unfused graph does, whatever the group boundaries, the values read
// by several groups, the outputs that are also intermediates, inputs or
// aliases, and the buffers that kernels overwrite in place.
#include "CompileTestUtil.h"

#include <fmt/format.h>

namespace kiln::test {
namespace {

TEST_CASE("a pointwise chain with broadcasts is one kernel", "[compiler]") {
  // n = 1 (a [17, 1] output) is pinned by the [!mayfail] test of a size-1
  // trailing axis in ElementwiseCompileTest.cpp.
  int64_t n = GENERATE(3, 7, 65, 257);
  INFO("n = " << n);
  CompileCase c("pointwise_chain");
  Tensor x = c.input("x", {17, n});
  Tensor columnScale = c.input("column_scale", {n});
  Tensor rowBias = c.input("row_bias", {17, 1});
  Tensor y = relu(x * columnScale + rowBias) - exp(x) / 2.0;
  c.output("y", cast(sigmoid(y) * tanh(x), DType::F16));
  CHECK(c.checkAndCountKernels() == 1);
}

TEST_CASE("a reduction with a prologue and an epilogue is one kernel", "[compiler]") {
  CompileCase c("reduction_fused");
  Tensor x = c.input("x", {9, 65});
  Tensor w = c.input("w", {65});
  // sqrt(sum((x * w)^2) + 1) per row, cast: prologue mul/mul, epilogue add/sqrt/cast.
  Tensor weighted = x * w;
  c.output("row_norm",
           cast(sqrt(reduceSum(weighted * weighted, {1}) + 1.0), DType::F16));
  CHECK(c.checkAndCountKernels() == 1);
}

TEST_CASE("reductions with prologues along rows and columns", "[compiler]") {
  CompileCase c("reduction_prologues");
  Tensor x = c.input("x", {33, 17, 5});
  c.output("column_mean_of_exp", reduceMean(exp(x), {0}, true) * 3.0);
  c.output("max_abs", reduceMax(abs(x - 0.5), {1, 2}));
  c.output("argmax_of_square", argmax(x * x, 1));
  c.check();
}

TEST_CASE("softmax with a prologue and an epilogue is one kernel", "[compiler]") {
  CompileCase c("softmax_fused");
  Tensor scores = c.input("scores", {4, 17, 33});
  Tensor mask = c.input("mask", {17, 33});
  // Attention-style: scale, add a broadcast mask, softmax, then log.
  c.output("y", log(softmax(scores * 0.125 + mask)));
  CHECK(c.checkAndCountKernels() == 1);
}

TEST_CASE("layer_norm of a residual sum feeding its epilogue and a residual", "[compiler]") {
  CompileCase c("layer_norm_fused");
  Tensor x = c.input("x", {5, 7, 64});
  Tensor r = c.input("r", {5, 7, 64});
  Tensor g = c.param("g", {64});
  Tensor b = c.param("b", {64});
  Tensor h = x + r;
  c.output("y", tanh(layerNorm(h, g, b)) + h);
  c.check();
}

TEST_CASE("matmul + bias + relu is one kernel", "[compiler]") {
  int64_t m = GENERATE(1, 17, 127);
  INFO("m = " << m);
  CompileCase c("dense");
  Tensor x = c.input("x", {m, 65});
  Tensor w = c.param("w", {65, 33});
  Tensor b = c.param("b", {33});
  c.output("y", relu(matmul(x, w) + b));
  CHECK(c.checkAndCountKernels() == 1);
}

TEST_CASE("conv + bias + relu is one kernel in both layouts", "[compiler]") {
  Layout layout = GENERATE(Layout::NCHW, Layout::NHWC);
  INFO("layout " << layoutName(layout));
  CompileCase c("conv_bias_relu");
  bool nhwc = layout == Layout::NHWC;
  Tensor x = c.input("x", nhwc ? std::vector<int64_t>{2, 13, 11, 3}
                               : std::vector<int64_t>{2, 3, 13, 11});
  Tensor w = c.param("w", nhwc ? std::vector<int64_t>{16, 3, 3, 3}
                               : std::vector<int64_t>{16, 3, 3, 3});
  Tensor b = c.param("b", nhwc ? std::vector<int64_t>{16} : std::vector<int64_t>{16, 1, 1});
  Conv2DOptions options;
  options.layout = layout;
  options.padding = Padding::same();
  c.output("y", relu(conv2d(x, w, options) + b));
  CHECK(c.checkAndCountKernels() == 1);
}

TEST_CASE("residual adds: of an input, of an intermediate, after a conv", "[compiler]") {
  CompileCase c("residual");
  Tensor x = c.input("x", {9, 64});
  Tensor w1 = c.param("w1", {64, 64});
  Tensor w2 = c.param("w2", {64, 64});
  Tensor b = c.param("b", {64});
  // h joins a second matmul and a later add: it is materialized once.
  Tensor h = relu(matmul(x, w1) + b + x);
  c.output("y", relu(matmul(h, w2) + h));
  Tensor image = c.input("image", {1, 8, 9, 9});
  Tensor k1 = c.param("k1", {8, 8, 3, 3});
  Tensor k2 = c.param("k2", {8, 8, 3, 3});
  Conv2DOptions same;
  same.padding = Padding::same();
  Tensor t = relu(conv2d(image, k1, same));
  c.output("block", relu(conv2d(t, k2, same) + image));
  c.check();
}

TEST_CASE("a value read by several groups is computed once and read by all", "[compiler]") {
  CompileCase c("multi_use");
  Tensor x = c.input("x", {17, 33});
  Tensor w = c.param("w", {33, 9});
  Tensor t = exp(x * 0.5);
  c.output("sum", reduceSum(t, {1}));
  c.output("softmax", softmax(t, 0));
  c.output("matmul", matmul(t, w));
  c.output("transposed", transpose(t, {1, 0}));
  c.output("neg", -t);
  c.check();
}

TEST_CASE("outputs that are intermediates, inputs, aliases or named twice", "[compiler]") {
  CompileCase c("output_kinds");
  Tensor x = c.input("x", {6, 35});
  Tensor w = c.param("w", {35, 12});
  Tensor t = x * 2.0;
  c.output("intermediate", t);      // also read by the next op
  c.output("next", t + 1.0);
  c.output("first_name", exp(t));   // one value under two names
  c.output("second_name", exp(t));  // (cse makes these one value)
  Tensor s = sigmoid(x);
  c.output("s_a", s);
  c.output("s_b", s);
  c.output("input_itself", x);
  c.output("param_itself", w);
  Tensor m = matmul(x, w);
  c.output("matmul_reshaped", reshape(m, {2, 3, 12}));
  c.output("matmul_flat", reshape(m, {72}));
  c.output("matmul_plus", m + 1.0);
  c.output("input_reshaped", reshape(x, {35, 6}));
  c.output("input_unsqueezed", unsqueeze(x, {0}));
  Tensor u = c.input("u", {1, 7, 1});
  c.output("squeezed_input_and_exp", exp(squeeze(u, {0, 2})));
  auto outputs = c.check();
  // The copies must not share memory with each other.
  REQUIRE(outputs.count("s_a") == 1);
  CHECK(outputs.at("s_a").bytes().data() != outputs.at("s_b").bytes().data());
}

TEST_CASE("in-place elementwise chains keep their results", "[compiler]") {
  CompileCase c("in_place");
  Tensor x = c.input("x", {17, 65});
  Tensor w = c.param("w", {65, 65});
  // Each h is read by a row reduction and then, last, by the pointwise group
  // of the next step, which may write over h's buffer.
  Tensor h = matmul(x, w);
  for (int step = 0; step < 5; ++step) {
    Tensor mean = reduceMean(h, {1}, true);
    h = tanh(h - mean) + 0.5 * sigmoid(h);
  }
  c.output("y", h);
  // A broadcast read must not be overwritten early: the row bias is read for
  // every column while the output buffer may alias the other operand.
  Tensor a = exp(c.input("a", {33, 17}));
  Tensor rowMax = reduceMax(a, {1}, true);
  Tensor shifted = a - rowMax;
  c.output("shifted_sum", reduceSum(shifted, {0}));
  c.output("shifted_scaled", shifted * 3.0 + rowMax);
  c.check();
}

} // namespace
} // namespace kiln::test
