// widenGraph: an f32 graph evaluated in f64 keeps the graph's own roundings
// to other dtypes and drops only the rounding to f32.
#include "ir/graph/Interpreter.h"
#include "ir/graph/Parser.h"
#include "ir/graph/Printer.h"
#include "ir/graph/Verifier.h"
#include "ir/graph/Widen.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace kiln;
using namespace kiln::ir;

TEST_CASE("widenGraph holds every f32 value in f64", "[ir][widen]") {
  auto graph = parseGraph(R"(graph @g {
    input %x: f32[2,3]
    param %w: f32[3,2]
    input %i: i64[2]
    %0: f32[2,2] = matmul(%x, %w) {allow_tf32 = true}
    %1: bf16[2,2] = cast(%0) {dtype = bf16}
    %2: f32[2,2] = cast(%1) {dtype = f32}
    %3: f32[] = constant() {dtype = f32, shape = [], value = [0.1]}
    %4: f32[2,2] = mul(%2, %3)
    %5: f32[2] = iota() {axis = 0, dtype = f32, shape = [2]}
    %6: f32[2,2] = gather(%4, %i)
    output "y" = %6
    output "j" = %5
  })",
                          "widen.kir");
  REQUIRE(graph);
  auto widened = widenGraph(**graph, DType::F32, DType::F64);
  REQUIRE(widened);
  REQUIRE(verifyGraph(**widened));
  CHECK(printGraph(**widened) == R"(graph @g {
  input %x: f64[2,3]
  input %i: i64[2]
  param %w: f64[3,2]
  %0: f64[2,2] = matmul(%x, %w) {accumulate = f64, allow_tf32 = false, transpose_a = false, transpose_b = false}
  %1: bf16[2,2] = cast(%0) {dtype = bf16}
  %2: f64[2,2] = cast(%1) {dtype = f64}
  %3: f64[] = constant() {dtype = f64, shape = [], value = [0.1]}
  %4: f64[2,2] = mul(%2, %3)
  %5: f64[2] = iota() {axis = 0, dtype = f64, shape = [2]}
  %6: f64[2,2] = gather(%4, %i) {axis = 0}
  output "y" = %6
  output "j" = %5
}
)");

  // The same values, widened exactly; the bf16 rounding happens in both, the
  // f32 rounding of the product by 0.1 only in the original.
  Rng rng(7);
  NamedTensors bindings = {
      {"x", HostTensor::randomNormal(DType::F32, {2, 3}, rng)},
      {"w", HostTensor::randomNormal(DType::F32, {3, 2}, rng)},
      {"i", HostTensor::fromDoubles(DType::I64, {2}, std::vector<double>{1, 0})}};
  NamedTensors wide = widenTensors(bindings, DType::F32, DType::F64);
  CHECK(wide.at("x").dtype() == DType::F64);
  CHECK(wide.at("i").dtype() == DType::I64);
  CHECK(wide.at("x").getDouble(4) == bindings.at("x").getDouble(4));
  auto narrowOut = interpret(**graph, bindings);
  auto wideOut = interpret(**widened, wide);
  REQUIRE(narrowOut);
  REQUIRE(wideOut);
  const HostTensor &y32 = narrowOut->at("y"), &y64 = wideOut->at("y");
  REQUIRE(y64.dtype() == DType::F64);
  for (int64_t k = 0; k < 4; ++k) {
    double bf16Value = y64.getDouble(k) / 0.1; // exactly a bf16 value, up to the division
    CHECK(roundToDType(bf16Value, DType::BF16) == Approx(bf16Value).epsilon(1e-12));
    CHECK(y64.getDouble(k) != roundToDType(y64.getDouble(k), DType::F32)); // not rounded to f32
    CHECK(y32.getDouble(k) == Approx(y64.getDouble(k)).epsilon(1e-6));
  }
}
