// Symbolic dims in the DSL: graph.input with kiln::dim, the same symbol used
// twice, a conflicting range, ops that infer symbolically, and errors that
// name the symbol (docs/dynamic-shapes.md).
#include "frontend/DslTestUtil.h"
#include "frontend/Ops.h"
#include "frontend/nn/Layers.h"
#include "ir/graph/Printer.h"

using namespace kiln;
using namespace kiln::dsltest;

TEST_CASE("an input dim can be a size symbol, shared by every use of its name",
          "[dsl][symbolic]") {
  Graph g("g");
  Tensor x = g.input("x", {kiln::dim("N", 1, 256), 784});
  Tensor mask = g.input("mask", {kiln::dim("N", 1, 256), 1});
  REQUIRE_FALSE(g.hasError());
  CHECK(x.str() == "f32[N,784]");
  CHECK(x.shape() == std::vector<int64_t>{256, 784}); // the upper bound
  REQUIRE(g.ir().symbols().size() == 1);
  CHECK(g.ir().symbols()[0] == ir::SizeSymbol{"N", 1, 256});
  Tensor y = x * mask; // the same N: broadcasts
  CHECK(y.str() == "f32[N,784]");
  // The DSL's default least value is 1.
  Tensor t = g.input("t", {kiln::dim("T", 64), 8});
  CHECK(g.ir().findSymbol("T")->min == 1);
  (void)t;
}

TEST_CASE("a symbol declared again with another range names both", "[dsl][symbolic]") {
  Graph g("g");
  g.input("x", {kiln::dim("N", 1, 256), 784});
  const int line = __LINE__ + 1;
  Tensor y = g.input("y", {kiln::dim("N", 1, 128)});
  CHECK(y.poisoned());
  std::string message = firstError(g);
  CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
  CHECK_THAT(message, Catch::Contains("input 'y': size symbol N is declared twice: N in [1, 256] "
                                      "and N in [1, 128]"));
}

TEST_CASE("DSL ops infer symbolically and their errors name the symbol", "[dsl][symbolic]") {
  Graph g("g");
  Tensor x = g.input("x", {kiln::dim("N", 1, 32), 3, 8, 8});
  Tensor flat = flatten(x, 1);
  CHECK(flat.str() == "f32[N,192]");
  Tensor rows = reshape(x, {-1, 64});
  CHECK(rows.str() == "f32[N*3,64]");
  Tensor back = reshape(rows, {-1, 3, 8, 8});
  CHECK(back.str() == "f32[N,3,8,8]");
  Tensor fixed = g.input("fixed", {32, 192});
  const int line = __LINE__ + 1;
  Tensor sum = flat + fixed;
  CHECK(sum.poisoned());
  std::string message = firstError(g);
  CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
  CHECK_THAT(message, Catch::Contains("add: cannot broadcast f32[N,192] and f32[32,192]"));
}

TEST_CASE("reshape's -1 must divide the symbolic element count", "[dsl][symbolic]") {
  Graph g("g");
  Tensor x = g.input("x", {kiln::dim("N", 1, 32), 6});
  Tensor bad = reshape(x, {-1, 4});
  CHECK(bad.poisoned());
  CHECK_THAT(firstError(g), Catch::Contains("reshape: cannot infer the -1 in [-1,4]: f32[N,6] has "
                                            "N*6 elements, not a multiple of 4 for every value "
                                            "of its symbols"));
}

TEST_CASE("nn layers build a symbolic graph that prints and verifies", "[dsl][symbolic]") {
  Graph g("cnn");
  Tensor x = g.input("x", {kiln::dim("B", 1, 8), 1, 12, 12});
  Tensor y = nn::Sequential(nn::Conv2D(4, {3, 3}, nn::Activation::Relu), nn::MaxPool2D(),
                            nn::Flatten(), nn::Dense(5))(g, x);
  g.output("y", y);
  REQUIRE(g.finalize().has_value());
  CHECK(y.str() == "f32[B,5]");
  CHECK_THAT(ir::printGraph(g.ir()), Catch::StartsWith("graph @cnn(B in [1, 8]) {\n"));
}
