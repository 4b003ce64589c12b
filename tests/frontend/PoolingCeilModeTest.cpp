// Pooling's ceilMode (PyTorch's ceil_mode), resolved by the DSL into extra bottom/right
// padding, and countIncludePad's default (true, as PyTorch and ONNX).
#include "frontend/Evaluate.h"
#include "frontend/Ops.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

namespace kiln {
namespace {

HostTensor ramp(int64_t size) {
  std::vector<double> values(static_cast<size_t>(size * size));
  std::iota(values.begin(), values.end(), 1.0);
  return HostTensor::fromDoubles(DType::F32, {1, 1, size, size}, values);
}

TEST_CASE("ceilMode keeps the last, overhanging window") {
  // 5x5, kernel 2, stride 2: floor gives 2x2, ceil 3x3 (the last row and column of windows
  // hold one input row or column).
  Graph graph("pool");
  Tensor x = graph.input("x", {1, 1, 5, 5});
  Tensor floorMax = maxPool2d(x, {.kernel = {2, 2}});
  Tensor ceilMax = maxPool2d(x, {.kernel = {2, 2}, .ceilMode = true});
  Tensor ceilAvg = avgPool2d(x, {.kernel = {2, 2}, .countIncludePad = false, .ceilMode = true});
  REQUIRE(floorMax.shape() == Shape{1, 1, 2, 2});
  REQUIRE(ceilMax.shape() == Shape{1, 1, 3, 3});
  graph.output("max", ceilMax);
  graph.output("avg", ceilAvg);
  auto outputs = evaluate(graph, {{"x", ramp(5)}});
  REQUIRE(outputs);
  // Input value at (r, c) is 5r + c + 1.
  CHECK(outputs->at("max").toDoubles() == std::vector<double>{7, 9, 10, 17, 19, 20, 22, 24, 25});
  CHECK(outputs->at("avg").toDoubles() ==
        std::vector<double>{4, 6, 7.5, 14, 16, 17.5, 21.5, 23.5, 25});
}

TEST_CASE("ceilMode drops a window that would start beyond the input and its leading padding") {
  // 4 wide, kernel 2, stride 3, no padding: ceil((4 - 2) / 3) + 1 = 2 windows, at 0 and 3;
  // the second starts inside the input, so it stays. 3 wide: windows at 0 and 3 -> the
  // second would start at 3 >= 3, so PyTorch drops it.
  Graph graph("pool");
  Tensor four = graph.input("four", {1, 1, 4, 4});
  Tensor three = graph.input("three", {1, 1, 3, 3});
  CHECK(maxPool2d(four, {.kernel = {2, 2}, .stride = {3, 3}, .ceilMode = true}).shape() ==
        Shape{1, 1, 2, 2});
  CHECK(maxPool2d(three, {.kernel = {2, 2}, .stride = {3, 3}, .ceilMode = true}).shape() ==
        Shape{1, 1, 1, 1});
}

TEST_CASE("average pooling counts padding by default; with ceilMode an overhang is an error") {
  Graph graph("pool");
  Tensor x = graph.input("x", {1, 1, 3, 3});
  Tensor padded = avgPool2d(x, {.kernel = {3, 3}, .stride = {1, 1},
                                .padding = Padding::symmetric(1, 1)});
  graph.output("y", padded);
  auto outputs = evaluate(graph, {{"x", ramp(3)}});
  REQUIRE(outputs);
  // The corner window holds 1, 2, 4, 5 and five zeros of padding: 12 / 9.
  CHECK(outputs->at("y").getDouble(0) == Approx(12.0 / 9.0));

  Graph failing("pool");
  Tensor y = failing.input("y", {1, 1, 5, 5});
  Tensor overhang = avgPool2d(y, {.kernel = {2, 2}, .ceilMode = true});
  CHECK(overhang.poisoned());
  REQUIRE(failing.error());
  CHECK_THAT(failing.error()->message(),
             Catch::Contains("with ceilMode the last window along H overhangs the padding by 1"));
}

} // namespace
} // namespace kiln
