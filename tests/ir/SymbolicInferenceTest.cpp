// Shape inference with symbolic sizes, family by family, and its errors: each
// names the op and the symbol (docs/dynamic-shapes.md).
#include "ir/graph/Graph.h"
#include "ir/graph/Parser.h"
#include "ir/graph/Verifier.h"

#include <catch2/catch.hpp>

using namespace kiln;
using namespace kiln::ir;

namespace {

/// Parses `body` inside a graph that declares N in [1, 64] and T in [6, 32],
/// with inputs %x: f32[N,T,16] and %img: f32[N,3,T,T].
Expected<std::unique_ptr<Graph>> parseBody(const std::string &body) {
  return parseGraph("graph @g(N in [1, 64], T in [6, 32]) {\n"
                    "  input %x: f32[N,T,16]\n"
                    "  input %img: f32[N,3,T,T]\n" +
                    body + "}\n");
}

/// The type a node of `body` infers: body ends with "%r: <declared> = op(...)"
/// and the declared type must match, so pass the expected text as declared.
void checkInfers(const std::string &node) {
  auto graph = parseBody("  " + node + "\n  output \"r\" = %r\n");
  INFO(node);
  if (!graph)
    FAIL(graph.error().str());
  CHECK(verifyGraph(**graph).has_value());
}

std::string errorOf(const std::string &node) {
  auto graph = parseBody("  " + node + "\n  output \"r\" = %r\n");
  INFO(node);
  REQUIRE_FALSE(graph.has_value());
  return graph.error().message();
}

} // namespace

TEST_CASE("elementwise ops broadcast equal sizes or 1", "[ir][symbolic]") {
  checkInfers("%r: f32[N,T,16] = relu(%x)");
  checkInfers("%r: f16[N,T,16] = cast(%x) {dtype = f16}");
  checkInfers("%r: f32[N,T,16] = add(%x, %x)");
  checkInfers("%o: f32[1,1,16] = constant() {dtype = f32, shape = [1, 1, 16], value = [1.0]}\n"
              "  %r: f32[N,T,16] = mul(%x, %o)");
  checkInfers("%r: bool[N,T,16] = lt(%x, %x)");
  CHECK(errorOf("%r: f32[N,T,16] = add(%x, %img)") ==
        "add: cannot broadcast f32[N,T,16] and f32[N,3,T,T]");
}

TEST_CASE("constant shapes stay static and do not broadcast against a symbol", "[ir][symbolic]") {
  // 64 is N's upper bound, but N and 64 are different sizes.
  CHECK(errorOf("%c: f32[64,32,16] = constant() {dtype = f32, shape = [64, 32, 16], value = "
                "[1.0]}\n  %r: f32[64,32,16] = add(%x, %c)") ==
        "add: cannot broadcast f32[N,T,16] and f32[64,32,16]");
}

TEST_CASE("reductions keep or drop symbolic axes", "[ir][symbolic]") {
  checkInfers("%r: f32[N,16] = reduce_sum(%x) {axes = [1]}");
  checkInfers("%r: f32[N,1,16] = reduce_max(%x) {axes = [1], keepdims = true}");
  checkInfers("%r: i64[T,16] = argmax(%x) {axis = 0}");
  checkInfers("%r: f32[N,T,16] = softmax(%x) {axis = 1}");
}

TEST_CASE("reducing an axis that can be empty is refused at the least size", "[ir][symbolic]") {
  auto graph = parseGraph("graph @g(N in [0, 4]) {\n  input %x: f32[N,3]\n"
                          "  %r: f32[3] = reduce_max(%x) {axes = [0]}\n  output \"r\" = %r\n}\n");
  REQUIRE_FALSE(graph.has_value());
  CHECK(graph.error().message() ==
        "reduce_max: cannot reduce empty axis 0 of f32[N,3]: N is 0 < 1 at N = 0 (of N in [0, 4])");
}

TEST_CASE("matmul carries batch and rows, and compares K structurally", "[ir][symbolic]") {
  checkInfers("%w: f32[16,8] = constant() {dtype = f32, shape = [16, 8], value = [1.0]}\n"
              "  %r: f32[N,T,8] = matmul(%x, %w)");
  checkInfers("%r: f32[N,T,T] = matmul(%x, %x) {transpose_b = true}");
  checkInfers("%r: f32[N,16,16] = matmul(%x, %x) {transpose_a = true}");
  CHECK(errorOf("%r: f32[N,T,8] = matmul(%x, %x)") ==
        "matmul: contraction dims differ: a f32[N,T,16] has K = 16, b f32[N,T,16] has K = T");
}

TEST_CASE("attention carries a symbolic batch; each sequence's sizes are static",
          "[ir][symbolic]") {
  const std::string q = "%s: f32[N,16] = reduce_sum(%x) {axes = [1]}\n"
                        "  %q: f32[N,1,2,8] = reshape(%s) {shape = [64, 1, 2, 8], sizes = [N, 1, "
                        "2, 8]}\n";
  checkInfers(q + "  %r: f32[N,1,2,8] = scaled_dot_product_attention(%q, %q, %q) {causal = "
                  "true, scale = 0.25}");
  checkInfers(q + "  %m: bool[1,2] = constant() {dtype = bool, shape = [1, 2], value = [1]}\n"
                  "  %r: f32[N,1,2,8] = scaled_dot_product_attention(%q, %q, %q, %m) {causal = "
                  "false, scale = 0.25}");
  CHECK(errorOf("%r: f32[N,T,16] = scaled_dot_product_attention(%x, %x, %x) {causal = false, "
                "scale = 0.25}") ==
        "scaled_dot_product_attention: a sequence's length and head dim (axis 1 of operand 0 "
        "f32[N,T,16]) is the symbolic size T (T in [6, 32]); it must be static");
}

TEST_CASE("windows compute floor divisions and check the fit at the least size",
          "[ir][symbolic]") {
  std::string filter = "%w: f32[4,3,3,3] = constant() {dtype = f32, shape = [4, 3, 3, 3], "
                       "value = [1.0]}\n  ";
  checkInfers(filter + "%r: f32[N,4,T-2,T-2] = conv2d(%img, %w)");
  checkInfers(filter + "%r: f32[N,4,(T+1)/2,(T+1)/2] = conv2d(%img, %w) {stride = [2, 2], "
                       "padding = [1, 1, 1, 1]}");
  checkInfers(filter + "%r: f32[N,4,(T-3)/2+1,T-4] = conv2d(%img, %w) {stride = [2, 1], "
                       "dilation = [1, 2]}");
  checkInfers("%r: f32[N,3,T/2,T/2] = max_pool2d(%img) {kernel = [2, 2], stride = [2, 2]}");
  checkInfers("%r: f32[N,3,T-2,T-2] = avg_pool2d(%img) {kernel = [3, 3], stride = [1, 1]}");
  CHECK(errorOf("%r: f32[N,3,1,1] = max_pool2d(%img) {kernel = [7, 7], stride = [1, 1]}") ==
        "max_pool2d: the 7x7 window does not fit the TxT input with padding [0,0,0,0]: T is 6 < 7 "
        "at T = 6 (of T in [6, 32])");
  CHECK(errorOf(filter + "%r: f32[N,4,1,1] = conv2d(%img, %w) {dilation = [4, 4]}") ==
        "conv2d: the 3x3 filter (dilation 4x4) does not fit the TxT input with padding "
        "[0,0,0,0]: T is 6 < 9 at T = 6 (of T in [6, 32])");
}

TEST_CASE("axes that decide weights or a folded constant must be static", "[ir][symbolic]") {
  CHECK(errorOf("%r: f32[N,1,1,1] = global_avg_pool(%img)") ==
        "global_avg_pool: the pooled height (axis 2 of operand 0 f32[N,3,T,T]) is the symbolic "
        "size T (T in [6, 32]); it must be static");
  CHECK(errorOf("%t: f32[N,T,3,T] = transpose(%img) {perm = [0, 2, 1, 3]}\n"
                "  %w: f32[4,32,3,3] = constant() {dtype = f32, shape = [4, 32, 3, 3], value = "
                "[1.0]}\n  %r: f32[N,4,1,T-2] = conv2d(%t, %w)") ==
        "conv2d: the channel axis (axis 1 of operand 0 f32[N,T,3,T]) is the symbolic size T (T in "
        "[6, 32]); it must be static");
  // batch_norm's per-channel operands are static, so a symbolic channel axis cannot match.
  std::string stats = "%s: f32[32] = constant() {dtype = f32, shape = [32], value = [1.0]}\n  ";
  CHECK(errorOf(stats + "%r: f32[N,T,16] = batch_norm(%x, %s, %s, %s, %s)") ==
        "batch_norm: scale must have shape [T] (the channel axis 1 of x f32[N,T,16]), got [32]");
  std::string row = "%s: f32[16] = constant() {dtype = f32, shape = [16], value = [1.0]}\n  ";
  checkInfers(row + "%r: f32[N,T,16] = layer_norm(%x, %s, %s)");
  CHECK(errorOf(row + "%r: f32[N,T,16] = layer_norm(%x, %s, %s) {axis = 1}") ==
        "layer_norm: scale must have shape [T,16] (x[1:]), got [16]");
}

TEST_CASE("data movement carries symbolic sizes", "[ir][symbolic]") {
  checkInfers("%r: f32[16,N,T] = transpose(%x) {perm = [2, 0, 1]}");
  checkInfers("%r: f32[N,T*2,16] = concat(%x, %x) {axis = 1}");
  checkInfers("%r: f32[N*3,T,16] = concat(%x, %x, %x) {axis = 0}");
  checkInfers("%r: f32[N+1,T+4,16] = pad(%x) {low = [1, 2, 0], high = [0, 2, 0]}");
  checkInfers("%u: f32[N,1,T,16] = unsqueeze(%x) {axes = [1]}\n"
              "  %r: f32[N,T,16] = squeeze(%u) {axes = [1]}");
  CHECK(errorOf("%r: f32[T,16] = squeeze(%x) {axes = [0]}") ==
        "squeeze: axis 0 of f32[N,T,16] has size N, not 1");
  checkInfers("%r: f32[N,T*16] = reshape(%x) {shape = [64, 512], sizes = [N, T*16]}");
  checkInfers("%r: f32[T,N*16] = reshape(%x) {shape = [32, 1024], sizes = [T, 16*N]}");
  checkInfers("%s: f32[N,1,16] = reduce_sum(%x) {axes = [1], keepdims = true}\n"
              "  %r: f32[N,T,16] = broadcast_to(%s) {shape = [64, 32, 16], sizes = [N, T, 16]}");
  CHECK(errorOf("%r: f32[N,T*16] = reshape(%x) {shape = [64, 511], sizes = [N, T*16]}") ==
        "reshape: shape [64,511] must hold the upper bounds [64,512] of sizes [N,T*16]");
  CHECK(errorOf("%r: f32[T,T,16] = broadcast_to(%x) {shape = [32, 32, 16], sizes = [T, T, 16]}") ==
        "broadcast_to: cannot broadcast f32[N,T,16] to f32[T,T,16]");
  CHECK(errorOf("%r: f32[N,T,16] = take_along_axis(%x, %x) {axis = 0}") ==
        "take_along_axis: symbolic sizes are not supported by this op yet (operand 0 is "
        "f32[N,T,16]); specialize the graph first (docs/dynamic-shapes.md)");
}

TEST_CASE("the verifier checks shape against the symbolic sizes", "[ir][symbolic]") {
  Graph graph("g");
  REQUIRE(graph.declareSymbol({"N", 1, 8}));
  SizeExpr n = SizeExpr::symbol({"N", 1, 8});
  // shape must be the upper bound 8; 7 is a broken type no parser would build.
  TensorType broken{DType::F32, {7}, {n}};
  REQUIRE(graph.addInput("x", broken));
  Value *x = graph.findInput("x");
  REQUIRE(graph.addOutput("y", x));
  auto verified = verifyGraph(graph);
  REQUIRE_FALSE(verified.has_value());
  CHECK(verified.error().message() ==
        "'x' f32[N]: dim 0 has shape 7 but its size N ranges over [1, 8]");
  // A type that names a symbol of another range is refused when it is added.
  auto other = graph.addInput("z", TensorType{DType::F32, {9}, {SizeExpr::symbol({"N", 1, 9})}});
  REQUIRE_FALSE(other.has_value());
  CHECK(other.error().message() ==
        "input 'z' f32[N] uses N in [1, 9], but graph @g declares N in [1, 8]");
  auto undeclared = graph.addInput("w", TensorType{DType::F32, {4}, {SizeExpr::symbol({"M", 1, 4})}});
  REQUIRE_FALSE(undeclared.has_value());
  CHECK(undeclared.error().message() ==
        "input 'w' f32[M] uses the size symbol M, which graph @g does not declare");
}
