// Reference interpreter: matmul (transposes, broadcast batch dims, integer
// wrap, f16 rounding of an fp64 accumulation) and conv2d (stride, padding,
// dilation, groups, both layouts), each against hand-computed values and
// against direct textbook loops on random data with odd sizes.
#include "ir/ReferenceTestUtil.h"

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::test;

namespace {

// a = [[1,2,3],[4,5,6]], b = [[7,8],[9,10],[11,12]], a @ b = [[58,64],[139,154]].
const std::vector<double> kA = {1, 2, 3, 4, 5, 6};
const std::vector<double> kATransposed = {1, 4, 2, 5, 3, 6};
const std::vector<double> kB = {7, 8, 9, 10, 11, 12};
const std::vector<double> kBTransposed = {7, 9, 11, 8, 10, 12};
const std::vector<double> kAB = {58, 64, 139, 154};

/// The textbook definition of a grouped, strided, dilated, padded nchw
/// convolution, one output element at a time.
std::vector<double> directConvNchw(const HostTensor &input, const HostTensor &filter,
                                   std::array<int64_t, 2> stride, std::array<int64_t, 4> pad,
                                   std::array<int64_t, 2> dilation, int64_t groups,
                                   std::vector<int64_t> &outShape) {
  int64_t n = input.shape()[0], c = input.shape()[1], h = input.shape()[2], w = input.shape()[3];
  int64_t o = filter.shape()[0], cg = filter.shape()[1], kh = filter.shape()[2],
          kw = filter.shape()[3];
  int64_t oh = (h + pad[0] + pad[1] - dilation[0] * (kh - 1) - 1) / stride[0] + 1;
  int64_t ow = (w + pad[2] + pad[3] - dilation[1] * (kw - 1) - 1) / stride[1] + 1;
  outShape = {n, o, oh, ow};
  std::vector<double> out;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double sum = 0;
          int64_t group = oc / (o / groups);
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                int64_t iy = y * stride[0] - pad[0] + i * dilation[0];
                int64_t ix = x * stride[1] - pad[2] + j * dilation[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                  continue;
                int64_t channel = group * cg + ic;
                sum += input.getDouble(((b * c + channel) * h + iy) * w + ix) *
                       filter.getDouble(((oc * cg + ic) * kh + i) * kw + j);
              }
          out.push_back(sum);
        }
  (void)c;
  return out;
}

/// Permutes a rank-4 tensor: result axis i is input axis perm[i].
HostTensor permute4(const HostTensor &x, std::array<int, 4> perm) {
  const auto &s = x.shape();
  std::vector<int64_t> shape = {s[perm[0]], s[perm[1]], s[perm[2]], s[perm[3]]};
  std::array<int64_t, 4> strides = {s[1] * s[2] * s[3], s[2] * s[3], s[3], 1};
  std::vector<double> values;
  for (int64_t a = 0; a < shape[0]; ++a)
    for (int64_t b = 0; b < shape[1]; ++b)
      for (int64_t c = 0; c < shape[2]; ++c)
        for (int64_t d = 0; d < shape[3]; ++d)
          values.push_back(x.getDouble(a * strides[perm[0]] + b * strides[perm[1]] +
                                       c * strides[perm[2]] + d * strides[perm[3]]));
  return HostTensor::fromDoubles(x.dtype(), shape, values);
}

AttrMap convAttrs(std::vector<int64_t> stride, std::vector<int64_t> padding,
                  std::vector<int64_t> dilation, int64_t groups, std::string layout) {
  return {{"stride", std::move(stride)},     {"padding", std::move(padding)},
          {"dilation", std::move(dilation)}, {"groups", groups},
          {"layout", std::move(layout)},     {"accumulate", DType::F64}};
}

} // namespace

TEST_CASE("matmul by hand, with every transpose combination", "[reference][op:matmul]") {
  checkExact(run(OpKind::MatMul, {f32({2, 3}, kA), f32({3, 2}, kB)}), DType::F32, {2, 2}, kAB);
  checkExact(
      run(OpKind::MatMul, {f32({3, 2}, kATransposed), f32({3, 2}, kB)}, {{"transpose_a", true}}),
      DType::F32, {2, 2}, kAB);
  checkExact(
      run(OpKind::MatMul, {f32({2, 3}, kA), f32({2, 3}, kBTransposed)}, {{"transpose_b", true}}),
      DType::F32, {2, 2}, kAB);
  checkExact(run(OpKind::MatMul, {f32({3, 2}, kATransposed), f32({2, 3}, kBTransposed)},
                 {{"transpose_a", true}, {"transpose_b", true}}),
             DType::F32, {2, 2}, kAB);
}

TEST_CASE("matmul broadcasts a rank-2 operand over a batch", "[reference][op:matmul]") {
  // a[0] = identity, a[1] = 2 * identity; b is shared.
  checkExact(
      run(OpKind::MatMul, {f32({2, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2}), f32({2, 2}, {1, 2, 3, 4})}),
      DType::F32, {2, 2, 2}, {1, 2, 3, 4, 2, 4, 6, 8});
}

TEST_CASE("matmul broadcasts batch dims [2,1] x [3] on odd sizes", "[reference][op:matmul]") {
  Rng rng(3);
  const int64_t m = 3, k = 5, n = 7;
  HostTensor a = HostTensor::randomUniform(DType::F64, {2, 1, m, k}, rng);
  HostTensor b = HostTensor::randomUniform(DType::F64, {3, n, k}, rng); // transposed storage
  std::vector<double> expected;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < n; ++c) {
          double sum = 0;
          for (int64_t t = 0; t < k; ++t)
            sum += a.getDouble((i * m + r) * k + t) * b.getDouble((j * n + c) * k + t);
          expected.push_back(sum);
        }
  checkClose(run(OpKind::MatMul, {a, b}, {{"transpose_b", true}, {"accumulate", DType::F64}}),
             {2, 3, m, n}, expected);
}

TEST_CASE("matmul accumulates in fp64 and rounds once", "[reference][op:matmul]") {
  // [1, 2^-11, 2^-11] . [1, 1, 1] = 1 + 2^-10, exact in f16; an f16 running
  // sum would round 1 + 2^-11 to 1 twice and give 1.
  checkExact(run(OpKind::MatMul, {tensor(DType::F16, {1, 3}, {1, 0.00048828125, 0.00048828125}),
                                  tensor(DType::F16, {3, 1}, {1, 1, 1})}),
             DType::F16, {1, 1}, {1.0009765625});
  // i8 x i8 gives the i32 accumulator: 100 + 100 = 200 does not wrap.
  checkExact(run(OpKind::MatMul,
                 {tensor(DType::I8, {1, 2}, {100, 50}), tensor(DType::I8, {2, 1}, {1, 2})},
                 {{"accumulate", DType::I32}}),
             DType::I32, {1, 1}, {200});
  // The i32 accumulator wraps: (2^31 - 1) * 2 = 2^32 - 2 -> -2.
  checkExact(run(OpKind::MatMul,
                 {tensor(DType::I32, {1, 1}, {2147483647}), tensor(DType::I32, {1, 1}, {2})},
                 {{"accumulate", DType::I32}}),
             DType::I32, {1, 1}, {-2});
}

TEST_CASE("conv2d nchw by hand: plain, stride 2 + padding, dilation, groups",
          "[reference][op:conv2d]") {
  HostTensor image = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  checkExact(run(OpKind::Conv2D, {image, f32({1, 1, 2, 2}, {1, 0, 0, 1})}), DType::F32,
             {1, 1, 2, 2}, {6, 8, 12, 14});
  // Padding 1 on every side, stride 2, a 2x2 box: windows at rows/cols {-1,0} and {1,2}.
  checkExact(
      run(OpKind::Conv2D, {image, f32({1, 1, 2, 2}, {1, 1, 1, 1})},
          {{"stride", std::vector<int64_t>{2, 2}}, {"padding", std::vector<int64_t>{1, 1, 1, 1}}}),
      DType::F32, {1, 1, 2, 2}, {1, 5, 11, 28});
  // Asymmetric padding: only the bottom row and right column are padded.
  checkExact(run(OpKind::Conv2D, {image, f32({1, 1, 2, 2}, {1, 1, 1, 1})},
                 {{"padding", std::vector<int64_t>{0, 1, 0, 1}}}),
             DType::F32, {1, 1, 3, 3}, {12, 16, 9, 24, 28, 15, 15, 17, 9});
  // Dilation 2 spreads the 2x2 taps over the corners of the 3x3 image.
  checkExact(run(OpKind::Conv2D, {image, f32({1, 1, 2, 2}, {1, 1, 1, 1})},
                 {{"dilation", std::vector<int64_t>{2, 2}}}),
             DType::F32, {1, 1, 1, 1}, {20});
  // Two groups of one channel: channel 0 times 2, channel 1 times 3.
  HostTensor twoChannels = f32({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
  checkExact(
      run(OpKind::Conv2D, {twoChannels, f32({2, 1, 1, 1}, {2, 3})}, {{"groups", int64_t{2}}}),
      DType::F32, {1, 2, 2, 2}, {2, 4, 6, 8, 30, 60, 90, 120});
  // Without groups the 1x1 filter mixes both channels.
  checkExact(run(OpKind::Conv2D, {twoChannels, f32({1, 2, 1, 1}, {1, -1})}), DType::F32,
             {1, 1, 2, 2}, {-9, -18, -27, -36});
}

TEST_CASE("conv2d nhwc by hand", "[reference][op:conv2d]") {
  // The two-channel image of the previous case in nhwc: pixels (1,10), (2,20), ...
  HostTensor image = f32({1, 2, 2, 2}, {1, 10, 2, 20, 3, 30, 4, 40});
  // Filter [O=2, KH=1, KW=1, I=2]: out0 = c0 + c1, out1 = c1 - c0.
  checkExact(run(OpKind::Conv2D, {image, f32({2, 1, 1, 2}, {1, 1, -1, 1})},
                 {{"layout", std::string("nhwc")}}),
             DType::F32, {1, 2, 2, 2}, {11, 9, 22, 18, 33, 27, 44, 36});
}

TEST_CASE("conv2d nchw matches the direct definition: stride 2, padding, dilation, groups",
          "[reference][op:conv2d]") {
  Rng rng(5);
  // Odd sizes everywhere; 6 input channels and 4 outputs in 2 groups.
  HostTensor input = HostTensor::randomUniform(DType::F64, {2, 6, 9, 7}, rng);
  HostTensor filter = HostTensor::randomUniform(DType::F64, {4, 3, 3, 2}, rng);
  std::vector<int64_t> outShape;
  std::vector<double> expected =
      directConvNchw(input, filter, {2, 1}, {1, 2, 0, 1}, {2, 3}, 2, outShape);
  CHECK(outShape == std::vector<int64_t>{2, 4, 4, 5});
  checkClose(
      run(OpKind::Conv2D, {input, filter}, convAttrs({2, 1}, {1, 2, 0, 1}, {2, 3}, 2, "nchw")),
      outShape, expected);
}

TEST_CASE("conv2d nhwc equals the transposed nchw result", "[reference][op:conv2d]") {
  Rng rng(9);
  HostTensor input = HostTensor::randomUniform(DType::F64, {3, 4, 11, 8}, rng); // nchw
  HostTensor filter = HostTensor::randomUniform(DType::F64, {6, 2, 3, 3}, rng); // [O, I/g, KH, KW]
  AttrMap nchw = convAttrs({2, 2}, {1, 1, 2, 0}, {1, 2}, 2, "nchw");
  AttrMap nhwc = convAttrs({2, 2}, {1, 1, 2, 0}, {1, 2}, 2, "nhwc");
  HostTensor expected = run(OpKind::Conv2D, {input, filter}, nchw);
  HostTensor got =
      run(OpKind::Conv2D, {permute4(input, {0, 2, 3, 1}), permute4(filter, {0, 2, 3, 1})}, nhwc);
  HostTensor expectedNhwc = permute4(expected, {0, 2, 3, 1});
  checkClose(got, expectedNhwc.shape(), expectedNhwc.toDoubles());
}

TEST_CASE("conv2d on integers gives the accumulator dtype", "[reference][op:conv2d]") {
  // 1x1 filter of 3 over an i8 image: 50 * 3 = 150 fits the i32 accumulator.
  checkExact(run(OpKind::Conv2D,
                 {tensor(DType::I8, {1, 1, 1, 2}, {50, -2}), tensor(DType::I8, {1, 1, 1, 1}, {3})},
                 {{"accumulate", DType::I32}}),
             DType::I32, {1, 1, 1, 2}, {150, -6});
}
