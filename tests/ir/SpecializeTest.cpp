// bindSymbols, specialize and the reference interpreter on symbolic graphs:
// the bindings the inputs imply, the errors for sizes out of range or
// inconsistent inputs, and specialized graphs equal to the static ones.
#include "ir/graph/Interpreter.h"
#include "ir/graph/Parser.h"
#include "ir/graph/Printer.h"
#include "ir/graph/Specialize.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>

using namespace kiln;
using namespace kiln::ir;

namespace {

// A small model with a window, a flatten and a broadcast over the batch.
const char *kSymbolic = R"(graph @net(N in [1, 16], T in [5, 12]) {
  input %x: f32[N,2,T,T]
  input %bias: f32[N,1]
  param %w: f32[3,2,3,3]
  %c: f32[N,3,(T-3)/2+1,(T-3)/2+1] = conv2d(%x, %w) {stride = [2, 2]}
  %r: f32[N,3*((T-3)/2+1)*((T-3)/2+1)] = reshape(%c) {shape = [16, 75], sizes = [N, 3*((T-3)/2+1)*((T-3)/2+1)]}
  %s: f32[N,1] = reduce_sum(%r) {axes = [1], keepdims = true}
  %y: f32[N,1] = add(%s, %bias)
  output "y" = %y
}
)";

std::unique_ptr<Graph> parsed(std::string_view text) {
  auto graph = parseGraph(text);
  if (!graph)
    FAIL(graph.error().str());
  return std::move(*graph);
}

/// The static text of kSymbolic at N and T, written by hand.
std::string staticText(int64_t n, int64_t t) {
  int64_t out = (t - 3) / 2 + 1;
  return fmt::format(R"(graph @net {{
  input %x: f32[{0},2,{1},{1}]
  input %bias: f32[{0},1]
  param %w: f32[3,2,3,3]
  %c: f32[{0},3,{2},{2}] = conv2d(%x, %w) {{stride = [2, 2]}}
  %r: f32[{0},{3}] = reshape(%c) {{shape = [{0}, {3}]}}
  %s: f32[{0},1] = reduce_sum(%r) {{axes = [1], keepdims = true}}
  %y: f32[{0},1] = add(%s, %bias)
  output "y" = %y
}}
)",
                     n, t, out, 3 * out * out);
}

NamedTensors randomInputs(const Graph &graph, const LeafShapes &shapes, uint64_t seed) {
  Rng rng(seed);
  NamedTensors tensors;
  for (const auto &[name, shape] : shapes)
    tensors.emplace(name, HostTensor::randomUniform(DType::F32, shape, rng));
  (void)graph;
  return tensors;
}

bool sameBytes(const HostTensor &a, const HostTensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin(), b.bytes().end());
}

std::string bindError(const Graph &graph, const LeafShapes &shapes) {
  auto bindings = bindSymbols(graph, shapes);
  REQUIRE_FALSE(bindings.has_value());
  return bindings.error().message();
}

} // namespace

TEST_CASE("specialize puts the symbols' values in and equals the static graph",
          "[ir][symbolic]") {
  auto graph = parsed(kSymbolic);
  for (auto [n, t] : {std::pair<int64_t, int64_t>{1, 5}, {7, 8}, {16, 12}, {3, 11}}) {
    auto specialized = specialize(*graph, {{"N", n}, {"T", t}});
    REQUIRE(specialized.has_value());
    CHECK_FALSE((*specialized)->isSymbolic());
    CHECK(printGraph(**specialized) == printGraph(*parsed(staticText(n, t))));
  }
  auto missing = specialize(*graph, {{"N", 2}});
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().message() == "specialize @net: no value for the size symbol T in [5, 12]");
  auto outside = specialize(*graph, {{"N", 17}, {"T", 5}});
  REQUIRE_FALSE(outside.has_value());
  CHECK(outside.error().message() == "specialize @net: N = 17 is outside its range N in [1, 16]");
}

TEST_CASE("narrowSymbols gives a symbol a narrower range", "[ir][symbolic]") {
  // A size bucket's graph (docs/dynamic-shapes.md): the same sizes, the new ranges in the
  // header, and reshape's `shape` at the new upper bounds (N = 4, T = 8: 3*3*3 = 27).
  auto graph = parsed(kSymbolic);
  std::vector<SizeSymbol> ranges{{"N", 1, 4}, {"T", 5, 8}};
  auto narrowed = narrowSymbols(*graph, ranges);
  REQUIRE(narrowed.has_value());
  std::string expected = kSymbolic;
  auto replace = [&](std::string_view from, std::string_view to) {
    size_t at = expected.find(from);
    REQUIRE(at != std::string::npos);
    expected.replace(at, from.size(), to);
  };
  replace("N in [1, 16], T in [5, 12]", "N in [1, 4], T in [5, 8]");
  replace("shape = [16, 75]", "shape = [4, 27]");
  CHECK(printGraph(**narrowed) == printGraph(*parsed(expected)));
  CHECK((*narrowed)->inputs()[0]->type().shape == std::vector<int64_t>{4, 2, 8, 8});
  // Narrowing only one symbol keeps the other's range; specializing the narrowed graph is
  // specializing the original.
  std::vector<SizeSymbol> onlyT{{"T", 7, 7}};
  auto single = narrowSymbols(*graph, onlyT);
  REQUIRE(single.has_value());
  CHECK((*single)->symbols() == std::vector<SizeSymbol>{{"N", 1, 16}, {"T", 7, 7}});
  auto viaNarrowed = specialize(**single, {{"N", 3}, {"T", 7}});
  auto direct = specialize(*graph, {{"N", 3}, {"T", 7}});
  REQUIRE((viaNarrowed.has_value() && direct.has_value()));
  CHECK(printGraph(**viaNarrowed) == printGraph(**direct));

  std::vector<SizeSymbol> wider{{"N", 0, 4}};
  auto refused = narrowSymbols(*graph, wider);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().message() == "narrow @net: N in [0, 4] is not a range within N in [1, 16]");
  std::vector<SizeSymbol> unknown{{"M", 1, 4}};
  auto undeclared = narrowSymbols(*graph, unknown);
  REQUIRE_FALSE(undeclared.has_value());
  CHECK(undeclared.error().message() == "narrow @net: the graph declares no size symbol M");

  // Widening is narrowing's inverse: the narrowed graph widened back prints as the original.
  std::vector<SizeSymbol> original{{"N", 1, 16}, {"T", 5, 12}};
  auto back = widenSymbols(**narrowed, original);
  REQUIRE(back.has_value());
  CHECK(printGraph(**back) == printGraph(*graph));
  auto notWider = widenSymbols(*graph, std::vector<SizeSymbol>{{"N", 2, 32}});
  REQUIRE_FALSE(notWider.has_value());
  CHECK(notWider.error().message() ==
        "widen @net: N in [2, 32] is not a range around N in [1, 16]");
}

TEST_CASE("bindSymbols reads the sizes from the inputs", "[ir][symbolic]") {
  auto graph = parsed(kSymbolic);
  auto bindings = bindSymbols(*graph, {{"x", {7, 2, 9, 9}}, {"bias", {7, 1}}, {"w", {3, 2, 3, 3}}});
  REQUIRE(bindings.has_value());
  CHECK(*bindings == SymbolBindings{{"N", 7}, {"T", 9}});

  CHECK(bindError(*graph, {{"x", {17, 2, 9, 9}}, {"bias", {17, 1}}}) ==
        "input 'x' dim 0 is the size symbol N in [1, 16], but the actual size 17 is outside its "
        "range");
  CHECK(bindError(*graph, {{"x", {7, 2, 4, 4}}}) ==
        "input 'x' dim 2 is the size symbol T in [5, 12], but the actual size 4 is outside its "
        "range");
  CHECK(bindError(*graph, {{"x", {7, 2, 9, 9}}, {"bias", {6, 1}}}) ==
        "the inputs disagree on N: 'x' dim 0 gives N = 7, 'bias' dim 0 gives N = 6");
  CHECK(bindError(*graph, {{"x", {7, 2, 9, 8}}}) ==
        "the inputs disagree on T: 'x' dim 2 gives T = 9, 'x' dim 3 gives T = 8");
  CHECK(bindError(*graph, {{"x", {7, 3, 9, 9}}}) == "input 'x' dim 1 is 2, got 3");
  CHECK(bindError(*graph, {{"x", {7, 2, 9}}}) ==
        "input 'x' is f32[N,2,T,T] (rank 4), got shape [7,2,9]");
}

TEST_CASE("bindSymbols solves a dim that is an expression of one symbol", "[ir][symbolic]") {
  auto graph = parsed(R"(graph @pairs(N in [1, 8]) {
  input %x: f32[N*2+1]
  output "y" = %x
}
)");
  auto bindings = bindSymbols(*graph, {{"x", {11}}});
  REQUIRE(bindings.has_value());
  CHECK(bindings->at("N") == 5);
  auto even = bindSymbols(*graph, {{"x", {10}}});
  REQUIRE_FALSE(even.has_value());
  CHECK(even.error().message() ==
        "input 'x' dim 0 is N*2+1: no single value of N in [1, 8] gives the actual size 10");
}

TEST_CASE("the interpreter runs a symbolic graph at the inputs' sizes", "[ir][symbolic]") {
  auto graph = parsed(kSymbolic);
  for (auto [n, t] : {std::pair<int64_t, int64_t>{1, 5}, {7, 9}, {16, 12}}) {
    LeafShapes shapes{{"x", {n, 2, t, t}}, {"bias", {n, 1}}, {"w", {3, 2, 3, 3}}};
    NamedTensors inputs = randomInputs(*graph, shapes, static_cast<uint64_t>(n * 100 + t));
    auto symbolic = interpret(*graph, inputs);
    REQUIRE(symbolic.has_value());
    auto expected = interpret(*parsed(staticText(n, t)), inputs);
    REQUIRE(expected.has_value());
    INFO("N = " << n << ", T = " << t);
    CHECK(sameBytes(symbolic->at("y"), expected->at("y")));
  }
  NamedTensors tooBig = randomInputs(*graph, {{"x", {2, 2, 13, 13}}, {"bias", {2, 1}}, {"w", {3, 2, 3, 3}}}, 1);
  auto refused = interpret(*graph, tooBig);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().message() ==
        "input 'x' dim 2 is the size symbol T in [5, 12], but the actual size 13 is outside its "
        "range");
}
