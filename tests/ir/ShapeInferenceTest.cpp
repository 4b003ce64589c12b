// Shape and dtype inference of every op family, including the error messages.
#include "ir/graph/OpTable.h"
#include "ir/graph/ShapeInference.h"

#include <catch2/catch.hpp>
#include <limits>

using namespace kiln;
using namespace kiln::ir;

namespace {

TensorType f32(Shape shape) { return TensorType{DType::F32, std::move(shape)}; }

Expected<TensorType> infer(OpKind kind, std::vector<TensorType> operands, AttrMap attrs = {}) {
  return inferResultType(kind, operands, attrs);
}

std::string errorOf(OpKind kind, std::vector<TensorType> operands, AttrMap attrs = {}) {
  auto result = infer(kind, std::move(operands), std::move(attrs));
  REQUIRE_FALSE(result);
  return result.error().message();
}

} // namespace

TEST_CASE("elementwise ops broadcast like NumPy", "[infer]") {
  CHECK(infer(OpKind::Add, {f32({8, 1, 5}), f32({3, 1})})->shape == Shape{8, 3, 5});
  CHECK(infer(OpKind::Mul, {f32({}), f32({2, 3})})->shape == Shape{2, 3});
  CHECK(errorOf(OpKind::Sub, {f32({2, 3}), f32({4})}) == "sub: cannot broadcast f32[2,3] and f32[4]");
  CHECK(errorOf(OpKind::Add, {f32({2}), TensorType{DType::F16, {2}}}) ==
        "add: operands must have the same dtype, got f32 and f16 (insert a cast)");
  CHECK(infer(OpKind::Lt, {f32({2}), f32({2})})->dtype == DType::Bool);
  CHECK(errorOf(OpKind::Exp, {TensorType{DType::I32, {2}}}) ==
        "exp: operand 0 must be floating point, got i32");
  CHECK(infer(OpKind::Neg, {TensorType{DType::I8, {3}}})->dtype == DType::I8);
  CHECK(errorOf(OpKind::And, {f32({1}), f32({1})}) == "and: operands must be bool, got f32 and f32");
  CHECK(infer(OpKind::Where, {TensorType{DType::Bool, {4, 1}}, f32({3}), f32({})})->shape ==
        Shape{4, 3});
  CHECK(infer(OpKind::Cast, {f32({2})}, {{"dtype", DType::BF16}})->dtype == DType::BF16);
  CHECK(errorOf(OpKind::Gelu, {f32({2})}, {{"approximate", std::string("fast")}}) ==
        "gelu: approximate must be \"none\" or \"tanh\", got \"fast\"");
  CHECK(errorOf(OpKind::Clamp, {f32({2})}, {{"min", 1.0}, {"max", 0.0}}) ==
        "clamp: min 1 is greater than max 0");
  CHECK(errorOf(OpKind::Add, {f32({2})}) == "add: expects 2 operands, got 1");
}

TEST_CASE("reductions remove or keep axes", "[infer]") {
  CHECK(infer(OpKind::ReduceSum, {f32({2, 3, 4})}, {{"axes", std::vector<int64_t>{-1, 0}}})->shape ==
        Shape{3});
  CHECK(infer(OpKind::ReduceMean, {f32({2, 3, 4})},
              {{"axes", std::vector<int64_t>{1}}, {"keepdims", true}})
            ->shape == Shape{2, 1, 4});
  CHECK(errorOf(OpKind::ReduceMax, {f32({2, 3})}, {{"axes", std::vector<int64_t>{2}}}) ==
        "reduce_max: axes entry 2 is out of range for rank 2");
  CHECK(errorOf(OpKind::ReduceSum, {f32({2, 3})}, {{"axes", std::vector<int64_t>{1, -1}}}) ==
        "reduce_sum: axes names axis 1 twice");
  auto argmax = infer(OpKind::ArgMax, {f32({5, 7})}, {{"axis", int64_t{1}}});
  CHECK(argmax->dtype == DType::I64);
  CHECK(argmax->shape == Shape{5});
}

TEST_CASE("matmul checks contraction dims and broadcasts batches", "[infer]") {
  CHECK(infer(OpKind::MatMul, {f32({4, 1, 3, 5}), f32({6, 5, 7})})->shape == Shape{4, 6, 3, 7});
  CHECK(infer(OpKind::MatMul, {f32({5, 3}), f32({7, 5})},
              {{"transpose_a", true}, {"transpose_b", true}})
            ->shape == Shape{3, 7});
  CHECK(errorOf(OpKind::MatMul, {f32({2, 3}), f32({4, 5})}) ==
        "matmul: contraction dims differ: a f32[2,3] has K = 3, b f32[4,5] has K = 4");
  CHECK(errorOf(OpKind::MatMul, {TensorType{DType::F64, {2, 2}}, TensorType{DType::F64, {2, 2}}}) ==
        "matmul: accumulate = f32 cannot hold products of f64 operands (use f64)");
  CHECK(errorOf(OpKind::MatMul, {TensorType{DType::F16, {2, 2}}, TensorType{DType::F16, {2, 2}}},
                {{"allow_tf32", true}}) == "matmul: allow_tf32 applies to f32 operands, got f16");
}

TEST_CASE("conv2d infers output sizes in both layouts and names channel mismatches", "[infer]") {
  AttrMap attrs{{"stride", std::vector<int64_t>{2, 2}},
                {"padding", std::vector<int64_t>{1, 1, 1, 1}},
                {"dilation", std::vector<int64_t>{1, 2}}};
  CHECK(infer(OpKind::Conv2D, {f32({8, 3, 15, 16}), f32({32, 3, 3, 3})}, attrs)->shape ==
        Shape{8, 32, 8, 7});
  attrs["layout"] = std::string("nhwc");
  CHECK(infer(OpKind::Conv2D, {f32({8, 15, 16, 3}), f32({32, 3, 3, 3})}, attrs)->shape ==
        Shape{8, 8, 7, 32});
  CHECK(errorOf(OpKind::Conv2D, {f32({1, 3, 28, 28}), f32({32, 1, 3, 3})}) ==
        "conv2d: input has 3 channels, filter expects 1 (filter shape [32,1,3,3], groups 1)");
  CHECK(infer(OpKind::Conv2D, {f32({1, 8, 5, 5}), f32({4, 2, 3, 3})}, {{"groups", int64_t{4}}})
            ->shape == Shape{1, 4, 3, 3});
  CHECK(errorOf(OpKind::Conv2D, {f32({1, 1, 2, 2}), f32({1, 1, 3, 3})}) ==
        "conv2d: the 3x3 filter (dilation 1x1) does not fit the 2x2 input with padding [0,0,0,0]");
}

TEST_CASE("pooling, global pooling, normalization and attention shapes", "[infer]") {
  AttrMap pool{{"kernel", std::vector<int64_t>{2, 2}}, {"stride", std::vector<int64_t>{2, 2}}};
  CHECK(infer(OpKind::MaxPool2D, {f32({8, 32, 27, 27})}, pool)->shape == Shape{8, 32, 13, 13});
  CHECK(infer(OpKind::GlobalAvgPool, {f32({2, 7, 5, 5})})->shape == Shape{2, 7, 1, 1});
  CHECK(infer(OpKind::Softmax, {f32({3, 10})})->shape == Shape{3, 10});
  CHECK(infer(OpKind::LayerNorm, {f32({2, 5, 8}), f32({8}), f32({8})})->shape == Shape{2, 5, 8});
  CHECK(errorOf(OpKind::LayerNorm, {f32({2, 5, 8}), f32({5, 8}), f32({8})}) ==
        "layer_norm: scale must have shape [8] (x[2:]), got [5,8]");
  CHECK(infer(OpKind::BatchNorm, {f32({2, 4, 3, 3}), f32({4}), f32({4}), f32({4}), f32({4})})
            ->shape == Shape{2, 4, 3, 3});
  AttrMap scale{{"scale", 0.125}};
  CHECK(infer(OpKind::ScaledDotProductAttention, {f32({2, 12, 20, 64}), f32({2, 12, 30, 64}),
                                                  f32({1, 12, 30, 32})},
              scale)
            ->shape == Shape{2, 12, 20, 32});
  CHECK(errorOf(OpKind::ScaledDotProductAttention, {f32({4, 8}), f32({5, 7}), f32({5, 7})}, scale) ==
        "scaled_dot_product_attention: q f32[4,8] and k f32[5,7] have different head dims");
  CHECK(errorOf(OpKind::ScaledDotProductAttention, {f32({6, 8}), f32({5, 8}), f32({5, 8})},
                {{"scale", 0.125}, {"causal", true}}) ==
        "scaled_dot_product_attention: causal attention needs at least as many keys as queries, "
        "got Lq = 6 > Lk = 5");
  // The optional mask broadcasts to the scores [..., Lq, Lk] and does not widen them.
  TensorType q{DType::F32, {2, 3, 4, 8}}, k{DType::F32, {2, 3, 5, 8}};
  CHECK(infer(OpKind::ScaledDotProductAttention, {q, k, k, TensorType{DType::Bool, {2, 1, 1, 5}}},
              scale)
            ->shape == Shape{2, 3, 4, 8});
  CHECK(infer(OpKind::ScaledDotProductAttention, {q, k, k, f32({5})}, scale)->shape ==
        Shape{2, 3, 4, 8});
  CHECK(errorOf(OpKind::ScaledDotProductAttention, {q, k, k, f32({7, 2, 3, 4, 5})}, scale) ==
        "scaled_dot_product_attention: the mask f32[7,2,3,4,5] does not broadcast to the scores "
        "[2,3,4,5]");
  CHECK(errorOf(OpKind::ScaledDotProductAttention, {q, k, k, f32({4, 4})}, scale) ==
        "scaled_dot_product_attention: the mask f32[4,4] does not broadcast to the scores "
        "[2,3,4,5]");
  CHECK(errorOf(OpKind::ScaledDotProductAttention,
                {q, k, k, TensorType{DType::I64, {4, 5}}}, scale) ==
        "scaled_dot_product_attention: the mask i64[4,5] must be bool (true attends) or f32 "
        "(added to the scores)");
}

TEST_CASE("data movement ops", "[infer]") {
  CHECK(infer(OpKind::Reshape, {f32({2, 3, 4})}, {{"shape", std::vector<int64_t>{6, 4}}})->shape ==
        Shape{6, 4});
  CHECK(errorOf(OpKind::Reshape, {f32({2, 3})}, {{"shape", std::vector<int64_t>{4}}}) ==
        "reshape: cannot reshape f32[2,3] (6 elements) to [4] (4 elements)");
  CHECK(infer(OpKind::Transpose, {f32({2, 3, 4})}, {{"perm", std::vector<int64_t>{2, 0, 1}}})
            ->shape == Shape{4, 2, 3});
  CHECK(errorOf(OpKind::Transpose, {f32({2, 3})}, {{"perm", std::vector<int64_t>{0, 0}}}) ==
        "transpose: perm [0,0] is not a permutation of rank 2");
  CHECK(infer(OpKind::Slice, {f32({10, 7})},
              {{"starts", std::vector<int64_t>{1, -3}},
               {"stops", std::vector<int64_t>{100, 7}},
               {"steps", std::vector<int64_t>{3, 1}}})
            ->shape == Shape{3, 3});
  CHECK(infer(OpKind::Concat, {f32({2, 3}), f32({2, 5})}, {{"axis", int64_t{-1}}})->shape ==
        Shape{2, 8});
  CHECK(errorOf(OpKind::Concat, {f32({2, 3}), f32({3, 5})}, {{"axis", int64_t{1}}}) ==
        "concat: operand 1 f32[3,5] does not match operand 0 f32[2,3] outside axis 1");
  CHECK(infer(OpKind::Pad, {f32({2, 3})},
              {{"low", std::vector<int64_t>{1, 0}}, {"high", std::vector<int64_t>{0, 2}}})
            ->shape == Shape{3, 5});
  TensorType ids{DType::I64, {4, 20}};
  CHECK(infer(OpKind::Gather, {f32({1000, 128}), ids})->shape == Shape{4, 20, 128});
  CHECK(errorOf(OpKind::Gather, {f32({10, 4}), f32({3})}) ==
        "gather: indices must be an integer dtype, got f32");
  CHECK(infer(OpKind::TakeAlongAxis, {f32({4, 10}), TensorType{DType::I32, {4, 1}}},
              {{"axis", int64_t{1}}})
            ->shape == Shape{4, 1});
  CHECK(infer(OpKind::Squeeze, {f32({1, 3, 1})}, {{"axes", std::vector<int64_t>{0, 2}}})->shape ==
        Shape{3});
  CHECK(errorOf(OpKind::Squeeze, {f32({2, 3})}, {{"axes", std::vector<int64_t>{0}}}) ==
        "squeeze: axis 0 of f32[2,3] has size 2, not 1");
  CHECK(infer(OpKind::Unsqueeze, {f32({3, 4})}, {{"axes", std::vector<int64_t>{0, 3}}})->shape ==
        Shape{1, 3, 4, 1});
  CHECK(infer(OpKind::BroadcastTo, {f32({3, 1})}, {{"shape", std::vector<int64_t>{2, 3, 4}}})
            ->shape == Shape{2, 3, 4});
  CHECK(errorOf(OpKind::BroadcastTo, {f32({3})}, {{"shape", std::vector<int64_t>{1}}}) ==
        "broadcast_to: cannot broadcast f32[3] to [1]");
  CHECK(infer(OpKind::Iota, {},
              {{"shape", std::vector<int64_t>{3, 4}}, {"axis", int64_t{1}}, {"dtype", DType::I32}})
            ->str() == "i32[3,4]");
  CHECK(errorOf(OpKind::Constant, {},
                {{"shape", std::vector<int64_t>{2, 2}},
                 {"dtype", DType::F32},
                 {"value", std::vector<double>{1, 2, 3}}}) ==
        "constant: value has 3 entries; shape [2,2] needs 1 (a splat) or 4");
}

TEST_CASE("helpers: broadcastShapes, normalizeAxis, sliceLength", "[infer]") {
  CHECK(broadcastShapes({5, 1}, {1, 4}) == Shape{5, 4});
  CHECK_FALSE(broadcastShapes({2}, {3}).has_value());
  CHECK(normalizeAxis(-1, 3) == 2);
  CHECK_FALSE(normalizeAxis(3, 3).has_value());
  CHECK(sliceLength(10, -2, 100, 1) == 2);
  CHECK(sliceLength(10, 5, 2, 1) == 0);
}

TEST_CASE("huge attributes give errors, never integer overflow", "[infer]") {
  constexpr int64_t kBig = std::numeric_limits<int64_t>::max();
  // A zero-size dim does not excuse huge other dims: strides still multiply them.
  CHECK(errorOf(OpKind::Reshape, {f32({0})},
                {{"shape", std::vector<int64_t>{int64_t{1} << 62, 4, 0}}}) ==
        "reshape: shape [4611686018427387904,4,0] has more than 2^53 elements (zero-size dims "
        "aside)");
  auto zeroSized = infer(OpKind::Reshape, {f32({0})}, {{"shape", std::vector<int64_t>{3, 0}}});
  CHECK(zeroSized->shape == Shape{3, 0});
  CHECK(errorOf(OpKind::Reshape, {f32({2})},
                {{"shape", std::vector<int64_t>{int64_t{1} << 62, 4}}}) ==
        "reshape: shape [4611686018427387904,4] has more than 2^53 elements (zero-size dims aside)");
  CHECK(errorOf(OpKind::Pad, {f32({2})},
                {{"low", std::vector<int64_t>{1}}, {"high", std::vector<int64_t>{kBig}}}) ==
        "pad: high entries must be <= 2^53, got 9223372036854775807");
  CHECK(infer(OpKind::Slice, {f32({4})},
              {{"starts", std::vector<int64_t>{-kBig}},
               {"stops", std::vector<int64_t>{kBig}},
               {"steps", std::vector<int64_t>{int64_t{1} << 53}}})
            ->shape == Shape{1});
  CHECK(errorOf(OpKind::Slice, {f32({4})},
                {{"starts", std::vector<int64_t>{0}},
                 {"stops", std::vector<int64_t>{4}},
                 {"steps", std::vector<int64_t>{kBig}}}) ==
        "slice: steps entries must be <= 2^53, got 9223372036854775807");
  CHECK(errorOf(OpKind::Conv2D, {f32({1, 1, 3, 3}), f32({1, 1, 1, 1})},
                {{"padding", std::vector<int64_t>{kBig, 1, 0, 0}}}) ==
        "conv2d: padding entries must be <= 2^53, got 9223372036854775807");
  constexpr int64_t kCap = int64_t{1} << 53;
  CHECK(errorOf(OpKind::Conv2D, {f32({1, 1, 3, 3}), f32({1, 1, 1, 1})},
                {{"padding", std::vector<int64_t>{kCap, kCap, 0, 0}}}) ==
        "conv2d: the output size overflows (padding [9007199254740992,9007199254740992,0,0])");
  CHECK(errorOf(OpKind::AvgPool2D, {f32({1, 1, 1, 1})},
                {{"kernel", std::vector<int64_t>{kCap, 4}},
                 {"stride", std::vector<int64_t>{1, 1}},
                 {"padding", std::vector<int64_t>{kCap - 1, 0, 1, 2}}}) ==
        "avg_pool2d: the 9007199254740992x4 window has more than 2^53 elements");
  // Zero-size dims do not excuse the other dims: strides still multiply them.
  CHECK_FALSE(checkedNumElements(Shape{0, int64_t{1} << 40, int64_t{1} << 40}).has_value());
  CHECK(checkedNumElements(Shape{0, 7}) == 0);
  CHECK(errorOf(OpKind::Iota, {},
                {{"shape", std::vector<int64_t>{int64_t{1} << 30, int64_t{1} << 30}},
                 {"axis", int64_t{0}},
                 {"dtype", DType::F32}}) ==
        "iota: result shape [1073741824,1073741824] has more than 2^53 elements (zero-size "
        "dims aside)");
}
