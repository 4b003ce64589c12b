// "same" padding resolution (TensorFlow's rule) and Padding's forms.
#include "frontend/Padding.h"

#include <catch2/catch.hpp>

using namespace kiln;

TEST_CASE("samePadding follows TensorFlow's rule", "[dsl][padding]") {
  // total = max((ceil(in / stride) - 1) * stride + (k - 1) * dilation + 1 - in, 0)
  CHECK(samePadding(28, 3, 1) == AxisPadding{1, 1});
  CHECK(samePadding(32, 3, 2) == AxisPadding{0, 1}); // total 1: the odd one after
  CHECK(samePadding(7, 4, 1) == AxisPadding{1, 2});
  CHECK(samePadding(10, 3, 1, 2) == AxisPadding{2, 2});
  CHECK(samePadding(5, 1, 2) == AxisPadding{0, 0});
  CHECK(samePadding(9, 2, 2) == AxisPadding{0, 1});
  CHECK(samePadding(4, 7, 3) == AxisPadding{3, 3}); // kernel larger than the input
  CHECK(samePadding(6, 3, 3) == AxisPadding{0, 0}); // total would be 0 exactly
}

TEST_CASE("Padding resolves per kind", "[dsl][padding]") {
  CHECK(Padding::valid().resolve({9, 9}, {3, 3}, {1, 1}) == std::array<int64_t, 4>{0, 0, 0, 0});
  CHECK(Padding::same().resolve({32, 7}, {3, 4}, {2, 1}) == std::array<int64_t, 4>{0, 1, 1, 2});
  CHECK(Padding::explicitPads(1, 2, 3, 4).resolve({9, 9}, {3, 3}, {1, 1}) ==
        std::array<int64_t, 4>{1, 2, 3, 4});
  CHECK(Padding::symmetric(2, 1).resolve({9, 9}, {3, 3}, {1, 1}) ==
        std::array<int64_t, 4>{2, 2, 1, 1});
  CHECK(Padding::same().str() == "same");
  CHECK(Padding::explicitPads(1, 2, 3, 4).str() == "[1, 2, 3, 4]");
  CHECK(std::string(layoutName(Layout::NHWC)) == "nhwc");
}
