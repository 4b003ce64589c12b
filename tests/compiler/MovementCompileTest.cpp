// End-to-end tests of every data movement op (reshape, transpose,
// broadcast_to, slice, concat, pad, gather, take_along_axis, squeeze,
// unsqueeze, iota, constant) compiled for the CPU against the reference, for
// element sizes of 1, 2, 4 and 8 bytes.
#include "CompileTestUtil.h"

#include <fmt/format.h>

namespace kiln::test {
namespace {

TEST_CASE("every data movement op moves elements of every size", "[compiler]") {
  DType dtype = GENERATE(DType::F32, DType::F16, DType::I8, DType::I64, DType::Bool, DType::F64,
                         DType::BF16);
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("movement_{}", dtypeName(dtype)));

  // reshape: a split and a merge of axes, and a reshape of a computed value.
  Tensor r = c.input("r", {6, 35}, dtype);
  c.output("reshape.split", reshape(r, {3, 2, 5, 7}));
  c.output("reshape.merge", reshape(reshape(r, {3, 2, 5, 7}), {6, 5, 7}));

  // transpose: a square-ish and a tall matrix (the tiled path), every
  // permutation of a rank-3 tensor, and nchw -> nhwc.
  Tensor m = c.input("m", {17, 33}, dtype);
  c.output("transpose.17x33", transpose(m, {1, 0}));
  Tensor big = c.input("big", {127, 257}, dtype);
  c.output("transpose.127x257", transpose(big, {1, 0}));
  Tensor t3 = c.input("t3", {3, 5, 7}, dtype);
  for (std::vector<int64_t> perm : std::vector<std::vector<int64_t>>{
           {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}})
    c.output(fmt::format("transpose.3x5x7.perm{}", fmt::join(perm, "")), transpose(t3, perm));
  Tensor image = c.input("image", {2, 3, 17, 65}, dtype);
  c.output("transpose.nchw_to_nhwc", transpose(image, {0, 2, 3, 1}));

  // broadcast_to: a row, a scalar, size-1 axes in the middle plus a new axis.
  c.output("broadcast_to.row", broadcastTo(c.input("row", {1, 33}, dtype), {17, 33}));
  c.output("broadcast_to.scalar", broadcastTo(c.input("scalar", {}, dtype), {5, 7}));
  c.output("broadcast_to.middle", broadcastTo(c.input("mid", {3, 1, 5}, dtype), {2, 3, 4, 5}));

  // slice: steps, negative bounds, bounds past the end (clamped).
  Tensor s = c.input("s", {17, 33, 5}, dtype);
  c.output("slice.steps", slice(s, {2, 0, 1}, {-1, 33, 5}, {2, 3, 1}));
  c.output("slice.negative", slice(s, {-5, 1, -3}, {17, 17, -1}, {1, 4, 1}));
  c.output("slice.clamped", slice(s, {-100, 30, 0}, {100, 100, 5}, {5, 1, 2}));
  c.output("slice.axis", sliceAxis(s, 1, 3, 30, 7));

  // concat along each axis, with unequal sizes, three operands, and one.
  Tensor c0 = c.input("c0", {3, 7}, dtype);
  Tensor c1 = c.input("c1", {5, 7}, dtype);
  Tensor c2 = c.input("c2", {1, 7}, dtype);
  c.output("concat.axis0", concat({c0, c1, c2}, 0));
  Tensor d0 = c.input("d0", {4, 1}, dtype);
  Tensor d1 = c.input("d1", {4, 17}, dtype);
  c.output("concat.axis1", concat({d0, d1, d0}, -1));
  c.output("concat.single", concat({c1}, 0));

  // pad: before and after, an unpadded axis, a non-zero value.
  Tensor p = c.input("p", {3, 5, 7}, dtype);
  c.output("pad.zero", pad(p, {1, 0, 2}, {0, 0, 3}));
  c.output("pad.value", pad(p, {0, 2, 1}, {1, 3, 0}, dtype == DType::Bool ? 1.0 : -3.0));

  // squeeze and unsqueeze.
  Tensor q = c.input("q", {1, 7, 1, 5}, dtype);
  c.output("squeeze", squeeze(q, {0, 2}));
  c.output("unsqueeze", unsqueeze(c.input("u", {7, 5}, dtype), {0, 2, 4}));
  c.check();
}

TEST_CASE("movement ops fused with elementwise ops on either side", "[compiler]") {
  DType dtype = GENERATE(DType::F32, DType::F16);
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("movement_fused_{}", dtypeName(dtype)));
  Tensor x = c.input("x", {3, 65, 127}, dtype);
  Tensor bias = c.input("bias", {65}, dtype);
  // A transpose read by elementwise ops, with a broadcast operand, and one of
  // a computed value; tiles at odd sizes.
  c.output("relu_transpose_plus_bias", relu(transpose(x, {0, 2, 1}) + bias));
  c.output("transpose_of_exp", transpose(exp(x * 0.25), {2, 1, 0}));
  c.output("transpose_twice", transpose(transpose(x, {1, 0, 2}), {0, 2, 1}) * 2.0);
  // Pad before and after an elementwise op: exp(pad(x)) has exp(0) = 1 in the
  // border, pad(exp(x)) has the pad value.
  Tensor small = c.input("small", {5, 7}, dtype);
  c.output("exp_of_pad", exp(pad(small, {1, 2}, {2, 1})));
  c.output("pad_of_exp", pad(exp(small), {0, 3}, {1, 0}, 0.5));
  c.output("slice_of_tanh", sliceAxis(tanh(x), 2, 1, 120, 3) + 1.0);
  c.output("concat_of_ops", concat({exp(small), small * 2.0, -small}, 1));
  c.output("broadcast_then_mul", broadcastTo(bias, {4, 65}) * c.input("rows", {4, 1}, dtype));
  Tensor table = c.input("table", {11, 33}, dtype);
  Tensor ids = c.input("ids", {6}, DType::I32, Values::indices(11));
  c.output("gather_of_exp", gather(exp(table), ids) - 1.0);
  c.output("reduce_of_transpose", reduceSum(transpose(x, {2, 0, 1}), {2}));
  c.check();
}

TEST_CASE("gather and take_along_axis read valid and negative indices", "[compiler]") {
  DType indexType = GENERATE(DType::I64, DType::I32, DType::I8);
  INFO("index dtype " << dtypeName(indexType));
  CompileCase c(fmt::format("gather_{}", dtypeName(indexType)));
  // An embedding lookup: rows of a table by token.
  Tensor table = c.input("table", {100, 16});
  Tensor tokens = c.input("tokens", {3, 7}, indexType, Values::indices(100));
  c.output("gather.embedding", gather(table, tokens));
  // Along a middle axis, with negative indices counting from the end.
  Tensor data = c.input("data", {4, 33, 5}, DType::F16);
  Tensor picks = c.input("picks", {2, 9}, indexType, Values::indices(33, /*negative=*/true));
  c.output("gather.axis1", gather(data, picks, 1));
  // A rank-0 index removes the axis.
  Tensor one = c.input("one", {}, indexType, Values::indices(5));
  c.output("gather.scalar_index", gather(data, one, -1));
  // take_along_axis: indices have data's rank and select per position.
  Tensor values = c.input("values", {5, 17, 7}, DType::I32);
  Tensor along = c.input("along", {5, 4, 7}, indexType, Values::indices(17, true));
  c.output("take_along_axis.axis1", takeAlongAxis(values, along, 1));
  Tensor last = c.input("last", {5, 17, 3}, indexType, Values::indices(7));
  c.output("take_along_axis.last", takeAlongAxis(values, last, -1));
  c.check();
}

TEST_CASE("iota counts along an axis in every numeric dtype", "[compiler]") {
  CompileCase c("iota");
  for (DType dtype : {DType::I64, DType::I32, DType::I8, DType::F32, DType::F16, DType::BF16,
                      DType::F64}) {
    // iota on its own and fused into a computation with an input.
    c.output(fmt::format("iota.{}.axis0", dtypeName(dtype)), iota(c.graph(), {9, 5}, 0, dtype));
    Tensor x = c.input(fmt::format("x.{}", dtypeName(dtype)), {3, 65}, dtype);
    c.output(fmt::format("iota.{}.plus_x", dtypeName(dtype)),
             x + iota(c.graph(), {3, 65}, 1, dtype));
  }
  // i8 iota past 127 wraps, as integer constants do.
  c.output("iota.i8.wraps", iota(c.graph(), {300}, 0, DType::I8));
  c.check();
}

TEST_CASE("constants: large baked-in tensors and scalars", "[compiler]") {
  CompileCase c("constants");
  HostTensor table = randomTensor(DType::F32, {17, 33}, c.rng());
  HostTensor bytes = randomTensor(DType::I8, {1025}, c.rng(), Values::uniform(-128, 128));
  Tensor x = c.input("x", {17, 33});
  // A large constant read by a kernel, and one that is itself an output.
  c.output("x_plus_table", x + constant(c.graph(), table));
  c.output("bytes", constant(c.graph(), bytes));
  // Scalars: a rank-0 splat, a splat over a shape, arithmetic with C++ doubles.
  c.output("scaled", x * constant(c.graph(), 2.5) - 0.125);
  c.output("splat", constant(c.graph(), -1.5, {3, 5}, DType::F16));
  c.output("splat_i64", constant(c.graph(), 7.0, {4}, DType::I64) +
                            c.input("n", {4}, DType::I64));
  c.output("scalar_only", constant(c.graph(), 3.0, {}, DType::F64));
  c.check();
}

TEST_CASE("slices that select nothing give empty outputs", "[compiler]") {
  CompileCase c("empty_slice");
  Tensor s = c.input("s", {7, 5});
  Tensor empty = slice(s, {5, 0}, {2, 5});
  c.output("empty", empty);
  c.output("empty_exp", exp(empty));
  c.output("nonempty", s * 2.0);
  c.check();
}

} // namespace
} // namespace kiln::test
