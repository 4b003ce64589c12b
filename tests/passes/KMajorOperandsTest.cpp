// The "kmajor" pass: e4m3 matmuls get operands with K contiguous (a weight
// [K, N] becomes transpose(w) read with transpose_b), the values stay the
// same, and nothing else is touched.
#include "PassTestUtil.h"

#include "ir/graph/Printer.h"
#include "passes/graph/GraphPasses.h"

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;

TEST_CASE("e4m3 matmuls read both operands K-contiguous", "[passes][kmajor]") {
  constexpr std::string_view kFp8 = R"(graph @fp8 {
    input %x: f32[5,48]
    input %y: f8e4m3[2,48,7]
    param %w: f32[48,24]
    %0: f8e4m3[5,48] = cast(%x) {dtype = f8e4m3}
    %1: f8e4m3[48,24] = cast(%w) {dtype = f8e4m3}
    %2: f8e4m3[5,24] = matmul(%0, %1) {accumulate = f32}
    %3: f8e4m3[2,7,24] = matmul(%y, %1) {accumulate = f32, transpose_a = true}
    output "a" = %2
    output "b" = %3
  })";
  auto original = parseOrFail(kFp8);
  auto graph = parseOrFail(kFp8);
  REQUIRE(runPassOrFail(createKMajorOperandsPass(), *graph));
  INFO(printGraph(*graph));
  auto matmuls = nodesOfKind(*graph, OpKind::MatMul);
  REQUIRE(matmuls.size() == 2);
  for (const Node *matmul : matmuls) {
    CHECK_FALSE(getBool(matmul->attrs(), "transpose_a"));
    CHECK(getBool(matmul->attrs(), "transpose_b"));
    CHECK(matmul->operand(1)->definingNode()->kind() == OpKind::Transpose);
  }
  CHECK(matmuls[1]->operand(0)->definingNode()->kind() == OpKind::Transpose);
  // Only data moves: the same values, bit for bit.
  for (uint64_t seed : {3, 4}) {
    NamedTensors bindings = randomBindings(*original, seed);
    requireCloseOutputs(interpretOrFail(*original, bindings), interpretOrFail(*graph, bindings),
                        0.0);
  }
  // A second run finds nothing to do.
  CHECK_FALSE(runPassOrFail(createKMajorOperandsPass(), *graph));
}

TEST_CASE("kmajor leaves other dtypes and K-contiguous e4m3 operands alone", "[passes][kmajor]") {
  auto graph = parseOrFail(R"(graph @other {
    input %a: bf16[8,32]
    input %b: bf16[32,16]
    input %c: f8e4m3[8,32]
    input %d: f8e4m3[16,32]
    %0: bf16[8,16] = matmul(%a, %b) {accumulate = f32}
    %1: f8e4m3[8,16] = matmul(%c, %d) {accumulate = f32, transpose_b = true}
    output "y" = %0
    output "z" = %1
  })");
  CHECK_FALSE(runPassOrFail(createKMajorOperandsPass(), *graph));
  CHECK(nodesOfKind(*graph, OpKind::Transpose).empty());
}
