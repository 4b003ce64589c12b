// Every DSL op function: the node it builds (op, inferred type, attributes
// the DSL resolves itself: "same" padding, reshape's -1, default accumulators
// and attention scale) and the user's line recorded on it.
#include "frontend/DslTestUtil.h"
#include "frontend/Ops.h"

#include <cmath>

using namespace kiln;
using namespace kiln::dsltest;
using ir::OpKind;

namespace {

/// Checks that `t` is ok, computed by `kind`, with type `type`.
void checkNode(const Tensor &t, OpKind kind, const std::string &type) {
  INFO("expected " << ir::opName(kind) << " " << type);
  REQUIRE(t.ok());
  const ir::Node *node = nodeOf(t);
  REQUIRE(node != nullptr);
  CHECK(node->kind() == kind);
  CHECK(t.str() == type);
}

const std::vector<int64_t> &ints(const Tensor &t, const char *name) {
  return ir::getInts(nodeOf(t)->attrs(), name);
}

} // namespace

TEST_CASE("unary op functions build their op with the operand's type", "[dsl][ops]") {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  Tensor b = g.input("b", {2, 3}, DType::Bool);
  checkNode(neg(x), OpKind::Neg, "f32[2,3]");
  checkNode(abs(x), OpKind::Abs, "f32[2,3]");
  checkNode(exp(x), OpKind::Exp, "f32[2,3]");
  checkNode(log(x), OpKind::Log, "f32[2,3]");
  checkNode(sqrt(x), OpKind::Sqrt, "f32[2,3]");
  checkNode(rsqrt(x), OpKind::Rsqrt, "f32[2,3]");
  checkNode(tanh(x), OpKind::Tanh, "f32[2,3]");
  checkNode(sigmoid(x), OpKind::Sigmoid, "f32[2,3]");
  checkNode(relu(x), OpKind::Relu, "f32[2,3]");
  checkNode(silu(x), OpKind::Silu, "f32[2,3]");
  checkNode(erf(x), OpKind::Erf, "f32[2,3]");
  checkNode(sin(x), OpKind::Sin, "f32[2,3]");
  checkNode(cos(x), OpKind::Cos, "f32[2,3]");
  checkNode(logicalNot(b), OpKind::Not, "bool[2,3]");

  Tensor geluErf = gelu(x);
  checkNode(geluErf, OpKind::Gelu, "f32[2,3]");
  CHECK(ir::getString(nodeOf(geluErf)->attrs(), "approximate") == "none");
  Tensor geluTanh = gelu(x, GeluApproximation::Tanh);
  CHECK(ir::getString(nodeOf(geluTanh)->attrs(), "approximate") == "tanh");

  Tensor half = cast(x, DType::F16);
  checkNode(half, OpKind::Cast, "f16[2,3]");
  CHECK(ir::getType(nodeOf(half)->attrs(), "dtype") == DType::F16);

  Tensor clamped = clamp(x, -0.5, 2.0);
  checkNode(clamped, OpKind::Clamp, "f32[2,3]");
  CHECK(ir::getFloat(nodeOf(clamped)->attrs(), "min") == -0.5);
  CHECK(ir::getFloat(nodeOf(clamped)->attrs(), "max") == 2.0);
  CHECK_FALSE(g.hasError());
}

TEST_CASE("binary op functions broadcast and comparisons give bool", "[dsl][ops]") {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  Tensor y = g.input("y", {2, 3});
  Tensor row = g.input("row", {3});
  Tensor column = g.input("column", {2, 1});
  Tensor b = g.input("b", {2, 3}, DType::Bool);
  checkNode(add(x, y), OpKind::Add, "f32[2,3]");
  checkNode(sub(x, row), OpKind::Sub, "f32[2,3]");
  checkNode(mul(column, row), OpKind::Mul, "f32[2,3]");
  checkNode(div(x, column), OpKind::Div, "f32[2,3]");
  checkNode(pow(x, y), OpKind::Pow, "f32[2,3]");
  checkNode(maximum(x, y), OpKind::Max, "f32[2,3]");
  checkNode(minimum(x, y), OpKind::Min, "f32[2,3]");
  checkNode(eq(x, y), OpKind::Eq, "bool[2,3]");
  checkNode(ne(x, row), OpKind::Ne, "bool[2,3]");
  checkNode(lt(x, y), OpKind::Lt, "bool[2,3]");
  checkNode(le(x, y), OpKind::Le, "bool[2,3]");
  checkNode(gt(x, y), OpKind::Gt, "bool[2,3]");
  checkNode(ge(x, y), OpKind::Ge, "bool[2,3]");
  checkNode(logicalAnd(b, b), OpKind::And, "bool[2,3]");
  checkNode(logicalOr(b, b), OpKind::Or, "bool[2,3]");
  checkNode(where(b, x, row), OpKind::Where, "f32[2,3]");
  // Scalar overloads: the scalar is a rank-0 constant of x's dtype.
  Tensor squared = pow(x, 2.0);
  checkNode(squared, OpKind::Pow, "f32[2,3]");
  checkNode(Tensor(&g, nodeOf(squared)->operand(1)), OpKind::Constant, "f32[]");
  checkNode(maximum(x, 0.0), OpKind::Max, "f32[2,3]");
  checkNode(minimum(x, 6.0), OpKind::Min, "f32[2,3]");
  checkNode(eq(x, 1.0), OpKind::Eq, "bool[2,3]");
  checkNode(ne(x, 1.0), OpKind::Ne, "bool[2,3]");
  CHECK_FALSE(g.hasError());
}

TEST_CASE("reduction op functions", "[dsl][ops]") {
  Graph g;
  Tensor x = g.input("x", {2, 3, 4});
  checkNode(reduceSum(x, {1}), OpKind::ReduceSum, "f32[2,4]");
  checkNode(reduceSum(x, {-1, 0}, true), OpKind::ReduceSum, "f32[1,3,1]");
  checkNode(reduceMean(x, {2}), OpKind::ReduceMean, "f32[2,3]");
  checkNode(reduceMax(x, {0}), OpKind::ReduceMax, "f32[3,4]");
  checkNode(reduceMin(x, {1, 2}), OpKind::ReduceMin, "f32[2]");
  checkNode(reduceProd(x, {1}, true), OpKind::ReduceProd, "f32[2,1,4]");
  checkNode(argmax(x, -1), OpKind::ArgMax, "i64[2,3]");
  checkNode(argmin(x, 1, true), OpKind::ArgMin, "i64[2,1,4]");
  checkNode(softmax(x), OpKind::Softmax, "f32[2,3,4]");
  Tensor logProbabilities = logSoftmax(x, 1);
  checkNode(logProbabilities, OpKind::LogSoftmax, "f32[2,3,4]");
  CHECK(ir::getInt(nodeOf(logProbabilities)->attrs(), "axis") == 1);
  CHECK_FALSE(g.hasError());
}

TEST_CASE("matmul picks the accumulator from the operand dtype", "[dsl][ops]") {
  Graph g;
  Tensor a = g.input("a", {4, 3});
  Tensor b = g.input("b", {3, 5});
  Tensor bT = g.input("bT", {5, 3});
  Tensor batched = g.input("batched", {2, 4, 3});
  Tensor ia = g.input("ia", {2, 3}, DType::I32);
  Tensor ib = g.input("ib", {3, 2}, DType::I32);
  Tensor da = g.input("da", {2, 3}, DType::F64);
  Tensor db = g.input("db", {3, 2}, DType::F64);

  Tensor plain = matmul(a, b);
  checkNode(plain, OpKind::MatMul, "f32[4,5]");
  CHECK(ir::getType(nodeOf(plain)->attrs(), "accumulate") == DType::F32);
  Tensor transposed = matmul(a, bT, {.transposeB = true});
  checkNode(transposed, OpKind::MatMul, "f32[4,5]");
  CHECK(ir::getBool(nodeOf(transposed)->attrs(), "transpose_b"));
  checkNode(matmul(batched, b), OpKind::MatMul, "f32[2,4,5]");
  Tensor integer = matmul(ia, ib);
  checkNode(integer, OpKind::MatMul, "i32[2,2]");
  CHECK(ir::getType(nodeOf(integer)->attrs(), "accumulate") == DType::I32);
  Tensor wide = matmul(da, db);
  checkNode(wide, OpKind::MatMul, "f64[2,2]");
  CHECK(ir::getType(nodeOf(wide)->attrs(), "accumulate") == DType::F64);
  Tensor tf32 = matmul(a, b, {.allowTf32 = true});
  CHECK(ir::getBool(nodeOf(tf32)->attrs(), "allow_tf32"));
  CHECK_FALSE(g.hasError());
}

TEST_CASE("conv2d resolves same padding into explicit pads", "[dsl][ops][padding]") {
  Graph g;
  Tensor x = g.input("x", {2, 3, 9, 9});
  Tensor w = g.input("w", {8, 3, 3, 3});

  Tensor valid = conv2d(x, w);
  checkNode(valid, OpKind::Conv2D, "f32[2,8,7,7]");
  CHECK(ints(valid, "padding") == std::vector<int64_t>{0, 0, 0, 0});

  // 9 / 2 -> 5 outputs; total padding (5 - 1) * 2 + 3 - 9 = 2: one each side.
  Tensor sameStride2 = conv2d(x, w, {.stride = {2, 2}, .padding = Padding::same()});
  checkNode(sameStride2, OpKind::Conv2D, "f32[2,8,5,5]");
  CHECK(ints(sameStride2, "padding") == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(ints(sameStride2, "stride") == std::vector<int64_t>{2, 2});

  // Dilation 2 makes the 3x3 window span 5: total padding 4.
  Tensor dilated = conv2d(x, w, {.padding = Padding::same(), .dilation = {2, 2}});
  checkNode(dilated, OpKind::Conv2D, "f32[2,8,9,9]");
  CHECK(ints(dilated, "padding") == std::vector<int64_t>{2, 2, 2, 2});

  Tensor explicitPads = conv2d(x, w, {.padding = Padding::explicitPads(1, 0, 2, 0)});
  checkNode(explicitPads, OpKind::Conv2D, "f32[2,8,8,9]");
  CHECK(ints(explicitPads, "padding") == std::vector<int64_t>{1, 0, 2, 0});

  Tensor xNhwc = g.input("x_nhwc", {2, 10, 9, 3});
  Tensor wNhwc = g.input("w_nhwc", {8, 3, 2, 3});
  // H: 10 -> total (10 - 1) + 3 - 10 = 2 -> [1, 1]; W: kernel 2 -> total 1 -> [0, 1].
  Tensor nhwc = conv2d(xNhwc, wNhwc, {.padding = Padding::same(), .layout = Layout::NHWC});
  checkNode(nhwc, OpKind::Conv2D, "f32[2,10,9,8]");
  CHECK(ints(nhwc, "padding") == std::vector<int64_t>{1, 1, 0, 1});
  CHECK(ir::getString(nodeOf(nhwc)->attrs(), "layout") == "nhwc");

  Tensor xg = g.input("xg", {1, 4, 5, 5});
  Tensor wg = g.input("wg", {6, 2, 3, 3});
  Tensor grouped = conv2d(xg, wg, {.groups = 2});
  checkNode(grouped, OpKind::Conv2D, "f32[1,6,3,3]");
  CHECK(ir::getInt(nodeOf(grouped)->attrs(), "groups") == 2);
  CHECK_FALSE(g.hasError());
}

TEST_CASE("pooling op functions default the stride to the kernel", "[dsl][ops][padding]") {
  Graph g;
  Tensor x = g.input("x", {2, 3, 9, 9});
  Tensor pooled = maxPool2d(x);
  checkNode(pooled, OpKind::MaxPool2D, "f32[2,3,4,4]");
  CHECK(ints(pooled, "stride") == std::vector<int64_t>{2, 2});
  CHECK(ints(pooled, "kernel") == std::vector<int64_t>{2, 2});

  // 9 / 2 -> 5 outputs; total padding 4 * 2 + 2 - 9 = 1, after.
  Tensor same = maxPool2d(x, {.padding = Padding::same()});
  checkNode(same, OpKind::MaxPool2D, "f32[2,3,5,5]");
  CHECK(ints(same, "padding") == std::vector<int64_t>{0, 1, 0, 1});

  Tensor average = avgPool2d(
      x, {.kernel = {3, 3}, .stride = {1, 1}, .padding = Padding::same(), .countIncludePad = true});
  checkNode(average, OpKind::AvgPool2D, "f32[2,3,9,9]");
  CHECK(ints(average, "padding") == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(ir::getBool(nodeOf(average)->attrs(), "count_include_pad"));

  checkNode(globalAvgPool(x), OpKind::GlobalAvgPool, "f32[2,3,1,1]");
  Tensor xNhwc = g.input("x_nhwc", {2, 9, 9, 3});
  checkNode(globalAvgPool(xNhwc, Layout::NHWC), OpKind::GlobalAvgPool, "f32[2,1,1,3]");
  CHECK_FALSE(g.hasError());
}

TEST_CASE("normalization and attention op functions", "[dsl][ops]") {
  Graph g;
  Tensor x = g.input("x", {2, 5, 6});
  Tensor scale = g.input("scale", {6});
  Tensor bias = g.input("bias", {6});
  Tensor normalized = layerNorm(x, scale, bias, -1, 1e-6);
  checkNode(normalized, OpKind::LayerNorm, "f32[2,5,6]");
  CHECK(ir::getFloat(nodeOf(normalized)->attrs(), "epsilon") == 1e-6);

  Tensor image = g.input("image", {2, 3, 4, 4});
  Tensor c = g.input("c", {3});
  checkNode(batchNorm(image, c, c, c, c), OpKind::BatchNorm, "f32[2,3,4,4]");

  Tensor q = g.input("q", {2, 4, 5, 8});
  Tensor k = g.input("k", {2, 4, 6, 8});
  Tensor v = g.input("v", {2, 4, 6, 7});
  Tensor attended = scaledDotProductAttention(q, k, v, true);
  checkNode(attended, OpKind::ScaledDotProductAttention, "f32[2,4,5,7]");
  CHECK(ir::getFloat(nodeOf(attended)->attrs(), "scale") == Approx(1.0 / std::sqrt(8.0)));
  CHECK(ir::getBool(nodeOf(attended)->attrs(), "causal"));
  Tensor scaled = scaledDotProductAttention(q, k, v, false, 0.25);
  CHECK(ir::getFloat(nodeOf(scaled)->attrs(), "scale") == 0.25);
  CHECK_FALSE(g.hasError());
}

TEST_CASE("data movement op functions", "[dsl][ops]") {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  Tensor y = g.input("y", {2, 3});
  Tensor t4 = g.input("t4", {2, 3, 4, 5});

  Tensor reshaped = reshape(x, {3, -1});
  checkNode(reshaped, OpKind::Reshape, "f32[3,2]");
  CHECK(ints(reshaped, "shape") == std::vector<int64_t>{3, 2});
  checkNode(reshape(t4, {-1}), OpKind::Reshape, "f32[120]");
  checkNode(flatten(t4), OpKind::Reshape, "f32[2,60]");
  checkNode(flatten(t4, 2), OpKind::Reshape, "f32[2,3,20]");
  checkNode(flatten(t4, -1), OpKind::Reshape, "f32[2,3,4,5]");
  checkNode(transpose(t4, {3, 1, 0, 2}), OpKind::Transpose, "f32[5,3,2,4]");
  checkNode(broadcastTo(g.input("row", {3}), {4, 2, 3}), OpKind::BroadcastTo, "f32[4,2,3]");

  Tensor sliced = slice(x, {0, 1}, {2, 3});
  checkNode(sliced, OpKind::Slice, "f32[2,2]");
  CHECK(ints(sliced, "steps") == std::vector<int64_t>{1, 1});
  Tensor strided = sliceAxis(x, 1, 0, 3, 2);
  checkNode(strided, OpKind::Slice, "f32[2,2]");
  CHECK(ints(strided, "starts") == std::vector<int64_t>{0, 0});
  CHECK(ints(strided, "stops") == std::vector<int64_t>{2, 3});
  CHECK(ints(strided, "steps") == std::vector<int64_t>{1, 2});

  checkNode(concat({x, y, x}, 0), OpKind::Concat, "f32[6,3]");
  std::vector<Tensor> parts{x, y};
  checkNode(concat(parts, -1), OpKind::Concat, "f32[2,6]");

  Tensor padded = pad(x, {1, 0}, {0, 2}, 7.0);
  checkNode(padded, OpKind::Pad, "f32[3,5]");
  CHECK(ir::getFloat(nodeOf(padded)->attrs(), "value") == 7.0);

  Tensor table = g.input("table", {10, 4});
  Tensor ids = g.input("ids", {2, 3}, DType::I64);
  checkNode(gather(table, ids), OpKind::Gather, "f32[2,3,4]");
  Tensor column = g.input("column", {2, 1}, DType::I64);
  checkNode(takeAlongAxis(x, column, 1), OpKind::TakeAlongAxis, "f32[2,1]");

  checkNode(squeeze(g.input("s", {2, 1, 3}), {1}), OpKind::Squeeze, "f32[2,3]");
  checkNode(unsqueeze(x, {0, 3}), OpKind::Unsqueeze, "f32[1,2,3,1]");
  CHECK_FALSE(g.hasError());
}

TEST_CASE("leaf op functions: iota and constants", "[dsl][ops]") {
  Graph g;
  Tensor counting = iota(g, {2, 3}, 1);
  checkNode(counting, OpKind::Iota, "i64[2,3]");
  CHECK(ir::getInt(nodeOf(counting)->attrs(), "axis") == 1);
  checkNode(iota(g, {4}, 0, DType::F32), OpKind::Iota, "f32[4]");

  Tensor splat = constant(g, 2.5, {2}, DType::F16);
  checkNode(splat, OpKind::Constant, "f16[2]");
  CHECK(ir::getFloats(nodeOf(splat)->attrs(), "value") == std::vector<double>{2.5});

  std::vector<double> values{1, -2, 3.5, 4, 0, 6};
  Tensor literal = constant(g, HostTensor::fromDoubles(DType::F32, {3, 2}, values));
  checkNode(literal, OpKind::Constant, "f32[3,2]");
  CHECK(ir::getFloats(nodeOf(literal)->attrs(), "value") == values);
  CHECK_FALSE(g.hasError());
}

TEST_CASE("op functions record the caller's file and line on the node", "[dsl][ops]") {
  Graph g;
  Tensor x = g.input("x", {4});
  const int line = __LINE__ + 1; // the next line
  Tensor y = relu(x);
  const Location &location = nodeOf(y)->location();
  CHECK(location.line == static_cast<unsigned>(line));
  CHECK_THAT(location.file, Catch::EndsWith("DslOpsTest.cpp"));
  // Nodes a DSL function makes internally carry the same user line.
  const int scalarLine = __LINE__ + 1; // the next line
  Tensor z = pow(x, 3.0);
  CHECK(nodeOf(z)->location().line == static_cast<unsigned>(scalarLine));
  CHECK(nodeOf(z)->operand(1)->definingNode()->location().line ==
        static_cast<unsigned>(scalarLine));
}

TEST_CASE("slices, reshapes and concat compose to the right values", "[dsl][ops]") {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  // Columns reversed by slicing them one at a time and joining them again.
  Tensor reversed =
      concat({sliceAxis(x, 1, 2, 3), sliceAxis(x, 1, 1, 2), sliceAxis(x, 1, 0, 1)}, 1);
  g.output("reversed", reversed);
  g.output("flat", reshape(transpose(x, {1, 0}), {-1}));
  g.output("rows", argmax(x, 1));
  NamedTensors out = run(
      g,
      {{"x", HostTensor::fromDoubles(DType::F32, {2, 3}, std::vector<double>{1, 5, 3, 9, 2, 4})}});
  CHECK(out.at("reversed").toDoubles() == std::vector<double>{3, 5, 1, 4, 2, 9});
  CHECK(out.at("flat").toDoubles() == std::vector<double>{1, 9, 5, 2, 3, 4});
  CHECK(out.at("rows").toDoubles() == std::vector<double>{1, 0});
}
