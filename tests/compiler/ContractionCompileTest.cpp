// End-to-end tests of the contractions: matmul (2-D, batched with broadcast,
// transposed, sizes below, at and above the tiles, every float dtype, integer
// operands with i32/i64 accumulators), conv2d in both layouts with padding,
// stride, dilation, groups and depthwise, and scaled dot-product attention.
#include "CompileTestUtil.h"

#include <fmt/format.h>

namespace kiln::test {
namespace {

struct MatMulShape {
  int64_t m, n, k;
};

/// Sizes below, at and above the GEMM tiles: 1, 5, 17, 64, 65, 127, 200, on
/// every role (M, N and K).
const std::vector<MatMulShape> kSquareShapes = {{1, 1, 1},    {5, 5, 5},       {17, 17, 17},
                                                {64, 64, 64}, {65, 65, 65},    {127, 127, 127},
                                                {200, 200, 200}};
const std::vector<MatMulShape> kMixedShapes = {{1, 65, 17}, {127, 1, 200}, {5, 200, 64},
                                               {65, 127, 5}, {17, 5, 127}, {200, 17, 1},
                                               {64, 65, 127}};

std::string shapeName(const MatMulShape &s) { return fmt::format("{}x{}x{}", s.m, s.n, s.k); }

Values operandValues(DType dtype) {
  // Full-range i8 operands: products up to 2^14, sums of 200 of them need the
  // i32 accumulator.
  if (dtype == DType::I8)
    return Values::uniform(-128, 128);
  return Values::normal();
}

TEST_CASE("matmul at sizes below, at and above the tiles for every dtype", "[compiler]") {
  DType dtype = GENERATE(DType::F32, DType::F64, DType::F16, DType::BF16, DType::F8E4M3,
                         DType::F8E5M2, DType::I8, DType::I32, DType::I64);
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("matmul_{}", dtypeName(dtype)));
  // f32 gets every shape; the other dtypes every other one, alternating.
  std::vector<MatMulShape> shapes = kSquareShapes;
  shapes.insert(shapes.end(), kMixedShapes.begin(), kMixedShapes.end());
  size_t offset = static_cast<size_t>(dtype) % 2;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (dtype != DType::F32 && (i + offset) % 2 != 0)
      continue;
    const MatMulShape &s = shapes[i];
    Tensor a = c.input("a." + shapeName(s), {s.m, s.k}, dtype, operandValues(dtype));
    Tensor b = c.input("b." + shapeName(s), {s.k, s.n}, dtype, operandValues(dtype));
    c.output("matmul." + shapeName(s), matmul(a, b));
  }
  c.check();
}

TEST_CASE("matmul with integer operands accumulates in the requested dtype", "[compiler]") {
  CompileCase c("matmul_int_accumulate");
  Tensor a = c.input("a", {17, 65}, DType::I8, Values::uniform(-128, 128));
  Tensor b = c.input("b", {65, 33}, DType::I8, Values::uniform(-128, 128));
  c.output("i8_i32", matmul(a, b));
  c.output("i8_i64", matmul(a, b, {.accumulate = DType::I64}));
  Tensor x = c.input("x", {5, 127}, DType::I32, Values::uniform(-100000, 100000));
  Tensor y = c.input("y", {127, 7}, DType::I32, Values::uniform(-100000, 100000));
  // Products near 10^10 overflow i32 and wrap; i64 holds them.
  c.output("i32_i32_wraps", matmul(x, y));
  c.output("i32_i64", matmul(x, y, {.accumulate = DType::I64}));
  Tensor f = c.input("f", {9, 200}, DType::F16);
  Tensor g = c.input("g", {200, 5}, DType::F16);
  c.output("f16_f64_accumulate", matmul(f, g, {.accumulate = DType::F64}));
  c.check();
}

TEST_CASE("matmul with transposed operands", "[compiler]") {
  DType dtype = GENERATE(DType::F32, DType::F16, DType::I8);
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("matmul_transpose_{}", dtypeName(dtype)));
  for (const MatMulShape &s : {MatMulShape{17, 65, 33}, MatMulShape{64, 1, 127},
                               MatMulShape{5, 200, 65}}) {
    for (bool transposeA : {false, true}) {
      for (bool transposeB : {false, true}) {
        std::string name = fmt::format("{}{}{}", shapeName(s), transposeA ? ".ta" : "",
                                       transposeB ? ".tb" : "");
        std::vector<int64_t> aShape = transposeA ? std::vector<int64_t>{s.k, s.m}
                                                 : std::vector<int64_t>{s.m, s.k};
        std::vector<int64_t> bShape = transposeB ? std::vector<int64_t>{s.n, s.k}
                                                 : std::vector<int64_t>{s.k, s.n};
        Tensor a = c.input("a." + name, aShape, dtype, operandValues(dtype));
        Tensor b = c.input("b." + name, bShape, dtype, operandValues(dtype));
        c.output("matmul." + name,
                 matmul(a, b, {.transposeA = transposeA, .transposeB = transposeB}));
      }
    }
  }
  c.check();
}

TEST_CASE("batched matmul broadcasts batch dims", "[compiler]") {
  DType dtype = GENERATE(DType::F32, DType::BF16);
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("batched_matmul_{}", dtypeName(dtype)));
  struct Batched {
    std::string name;
    std::vector<int64_t> a, b;
    bool transposeA = false, transposeB = false;
  };
  std::vector<Batched> cases = {
      {"same_batch", {3, 17, 33}, {3, 33, 5}},
      {"matrix_rhs", {2, 3, 17, 33}, {33, 65}},
      {"matrix_lhs", {17, 33}, {4, 33, 5}},
      {"both_broadcast", {2, 1, 7, 9}, {1, 3, 9, 5}},
      {"rank_extension", {3, 5, 65}, {2, 1, 65, 1}},
      {"transposed", {2, 33, 17}, {2, 5, 33}, true, true},
      {"transposed_b_broadcast", {3, 4, 64, 16}, {1, 4, 64, 16}, false, true},
  };
  for (const Batched &b : cases) {
    Tensor x = c.input("a." + b.name, b.a, dtype);
    Tensor y = c.input("b." + b.name, b.b, dtype);
    c.output("matmul." + b.name,
             matmul(x, y, {.transposeA = b.transposeA, .transposeB = b.transposeB}));
  }
  c.check();
}

// ---- conv2d

struct ConvCase {
  std::string name;
  std::vector<int64_t> input;  ///< [N, C, H, W]
  std::vector<int64_t> filter; ///< [O, C/groups, KH, KW]
  std::array<int64_t, 2> stride = {1, 1};
  Padding padding = Padding::valid();
  std::array<int64_t, 2> dilation = {1, 1};
  int64_t groups = 1;
};

const std::vector<ConvCase> &convCases() {
  static const std::vector<ConvCase> cases = {
      {"k3_valid", {2, 3, 13, 11}, {8, 3, 3, 3}},
      {"k3_same_s2", {1, 4, 15, 15}, {6, 4, 3, 3}, {2, 2}, Padding::same()},
      {"k3_dilation2", {1, 3, 17, 16}, {5, 3, 3, 3}, {1, 1}, Padding::symmetric(2, 2), {2, 2}},
      {"groups2", {2, 4, 9, 9}, {6, 2, 3, 3}, {1, 1}, Padding::symmetric(1, 1), {1, 1}, 2},
      {"depthwise", {1, 8, 10, 10}, {8, 1, 3, 3}, {1, 1}, Padding::same(), {1, 1}, 8},
      {"depthwise_multiplier", {2, 3, 7, 9}, {6, 1, 3, 3}, {2, 1}, Padding::valid(), {1, 1}, 3},
      {"pointwise_1x1", {2, 16, 7, 7}, {33, 16, 1, 1}},
      {"asym_k5x2", {1, 3, 12, 9}, {4, 3, 5, 2}, {1, 2}, Padding::explicitPads(2, 1, 0, 1)},
      {"wide_channels", {1, 32, 12, 12}, {65, 32, 3, 3}, {1, 1}, Padding::same()},
      {"stride3_dilation", {1, 2, 19, 19}, {3, 2, 3, 3}, {3, 3}, Padding::symmetric(1, 2), {2, 1}},
  };
  return cases;
}

std::vector<int64_t> nhwcOf(const std::vector<int64_t> &nchw) {
  return {nchw[0], nchw[2], nchw[3], nchw[1]};
}

TEST_CASE("conv2d in both layouts with padding, stride, dilation and groups", "[compiler]") {
  DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16, DType::F64);
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("conv_{}", dtypeName(dtype)));
  size_t i = 0;
  for (const ConvCase &conv : convCases()) {
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      // f32 gets every case in both layouts; the other dtypes alternate.
      if (dtype != DType::F32 && (i++ + static_cast<size_t>(dtype)) % 2 != 0)
        continue;
      bool nhwc = layout == Layout::NHWC;
      std::string name = fmt::format("{}.{}", conv.name, layoutName(layout));
      Tensor x = c.input("x." + name, nhwc ? nhwcOf(conv.input) : conv.input, dtype);
      // nhwc filters are [O, KH, KW, I/groups].
      std::vector<int64_t> filterShape =
          nhwc ? std::vector<int64_t>{conv.filter[0], conv.filter[2], conv.filter[3],
                                      conv.filter[1]}
               : conv.filter;
      Tensor w = c.param("w." + name, filterShape, dtype);
      Conv2DOptions options;
      options.stride = conv.stride;
      options.padding = conv.padding;
      options.dilation = conv.dilation;
      options.groups = conv.groups;
      options.layout = layout;
      c.output("conv." + name, conv2d(x, w, options));
    }
  }
  c.check();
}

TEST_CASE("conv2d with i8 operands accumulates in i32", "[compiler]") {
  CompileCase c("conv_i8");
  Tensor x = c.input("x", {1, 5, 9, 11}, DType::I8, Values::uniform(-128, 128));
  Tensor w = c.param("w", {7, 5, 3, 3}, DType::I8, Values::uniform(-128, 128));
  Conv2DOptions options;
  options.padding = Padding::symmetric(1, 1);
  c.output("conv.i8", conv2d(x, w, options));
  c.check();
}

TEST_CASE("scaled_dot_product_attention with and without a causal mask", "[compiler]") {
  DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16, DType::F64);
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("attention_{}", dtypeName(dtype)));
  Tensor q = c.input("q", {2, 4, 17, 16}, dtype);
  Tensor k = c.input("k", {2, 4, 17, 16}, dtype);
  Tensor v = c.input("v", {2, 4, 17, 8}, dtype);
  c.output("attention", scaledDotProductAttention(q, k, v));
  c.output("attention.causal", scaledDotProductAttention(q, k, v, true));
  // Fewer queries than keys: query i sees keys j <= i + (Lk - Lq).
  Tensor q2 = c.input("q2", {3, 5, 32}, dtype);
  Tensor k2 = c.input("k2", {3, 33, 32}, dtype);
  Tensor v2 = c.input("v2", {3, 33, 65}, dtype);
  c.output("attention.short_q.causal", scaledDotProductAttention(q2, k2, v2, true, 0.3));
  c.output("attention.short_q", scaledDotProductAttention(q2, k2, v2, false));
  // One key, one query.
  Tensor q3 = c.input("q3", {1, 1, 4}, dtype);
  Tensor k3 = c.input("k3", {1, 1, 4}, dtype);
  Tensor v3 = c.input("v3", {1, 1, 3}, dtype);
  c.output("attention.single", scaledDotProductAttention(q3, k3, v3, true));
  c.check();
}

TEST_CASE("scaled_dot_product_attention with a bool or an additive mask", "[compiler]") {
  DType dtype = GENERATE(DType::F32, DType::F16, DType::F64);
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("attention_mask_{}", dtypeName(dtype)));
  Tensor q = c.input("q", {2, 3, 17, 8}, dtype);
  Tensor k = c.input("k", {2, 3, 19, 8}, dtype);
  Tensor v = c.input("v", {2, 3, 19, 5}, dtype);
  // A random bool mask per batch, broadcast over heads; key i + 2 stays visible to query i
  // so no row is empty (an empty row is NaN, as in PyTorch).
  Tensor coin = c.input("coin", {2, 1, 17, 19}, DType::Bool);
  Graph &graph = *q.graph();
  Tensor diagonal = eq(iota(graph, {17, 19}, 1) - iota(graph, {17, 19}, 0), 2.0);
  Tensor attends = logicalOr(coin, diagonal);
  c.output("attention.bool", scaledDotProductAttention(q, k, v, attends));
  c.output("attention.bool.causal", scaledDotProductAttention(q, k, v, attends, true, 0.4));
  // An additive mask over the keys alone, broadcast to every query.
  Tensor bias = c.input("bias", {19}, dtype);
  c.output("attention.additive", scaledDotProductAttention(q, k, v, bias));
  c.check();
}

} // namespace
} // namespace kiln::test
