// Reference interpreter: max_pool2d (padding never wins, NaN propagates),
// avg_pool2d with and without count_include_pad, global_avg_pool, in both
// layouts, against hand-computed windows.
#include "ir/ReferenceTestUtil.h"

#include <limits>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::test;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

AttrMap pool(std::vector<int64_t> kernel, std::vector<int64_t> stride,
             std::vector<int64_t> padding = {0, 0, 0, 0}, std::string layout = "nchw") {
  return {{"kernel", std::move(kernel)},
          {"stride", std::move(stride)},
          {"padding", std::move(padding)},
          {"layout", std::move(layout)}};
}

// 1..9 as a [1,1,3,3] image.
HostTensor image3x3(double sign = 1) {
  std::vector<double> values;
  for (int i = 1; i <= 9; ++i)
    values.push_back(sign * i);
  return f32({1, 1, 3, 3}, values);
}
} // namespace

TEST_CASE("max_pool2d 2x2 stride 2", "[reference][op:max_pool2d]") {
  std::vector<double> values;
  for (int i = 1; i <= 16; ++i)
    values.push_back(i);
  checkExact(run(OpKind::MaxPool2D, {f32({1, 1, 4, 4}, values)}, pool({2, 2}, {2, 2})), DType::F32,
             {1, 1, 2, 2}, {6, 8, 14, 16});
  // Odd size 3x3 with a 2x2 window, stride 1.
  checkExact(run(OpKind::MaxPool2D, {image3x3()}, pool({2, 2}, {1, 1})), DType::F32, {1, 1, 2, 2},
             {5, 6, 8, 9});
}

TEST_CASE("max_pool2d padding never wins, even over negative values",
          "[reference][op:max_pool2d]") {
  // Windows at rows/cols {-1,0} and {1,2}; all values negative.
  checkExact(run(OpKind::MaxPool2D, {image3x3(-1)}, pool({2, 2}, {2, 2}, {1, 1, 1, 1})), DType::F32,
             {1, 1, 2, 2}, {-1, -2, -4, -5});
}

TEST_CASE("max_pool2d propagates NaN and works in nhwc", "[reference][op:max_pool2d]") {
  // nhwc [1,2,2,2]: channel 0 = 1,2,3,4 with a NaN, channel 1 = 10,-20,30,-40.
  HostTensor x = f32({1, 2, 2, 2}, {1, 10, kNaN, -20, 3, 30, 4, -40});
  checkExact(run(OpKind::MaxPool2D, {x}, pool({2, 2}, {2, 2}, {0, 0, 0, 0}, "nhwc")), DType::F32,
             {1, 1, 1, 2}, {kNaN, 30});
}

TEST_CASE("avg_pool2d divides by the valid count or by the whole window",
          "[reference][op:avg_pool2d]") {
  AttrMap attrs = pool({2, 2}, {2, 2}, {1, 1, 1, 1});
  checkExact(run(OpKind::AvgPool2D, {image3x3()}, attrs), DType::F32, {1, 1, 2, 2},
             {1, 2.5, 5.5, 7});
  attrs["count_include_pad"] = true;
  checkExact(run(OpKind::AvgPool2D, {image3x3()}, attrs), DType::F32, {1, 1, 2, 2},
             {0.25, 1.25, 2.75, 7});
}

TEST_CASE("avg_pool2d in nhwc with two channels", "[reference][op:avg_pool2d]") {
  HostTensor x = f32({1, 2, 2, 2}, {1, 10, 2, 20, 3, 30, 5, 50});
  checkExact(run(OpKind::AvgPool2D, {x}, pool({2, 1}, {1, 1}, {0, 0, 0, 0}, "nhwc")), DType::F32,
             {1, 1, 2, 2}, {2, 20, 3.5, 35});
}

TEST_CASE("global_avg_pool in both layouts", "[reference][op:global_avg_pool]") {
  checkExact(run(OpKind::GlobalAvgPool, {f32({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40})}),
             DType::F32, {1, 2, 1, 1}, {2.5, 25});
  checkExact(run(OpKind::GlobalAvgPool, {f32({2, 1, 3, 1}, {1, 2, 6, -1, -2, -6})},
                 {{"layout", std::string("nhwc")}}),
             DType::F32, {2, 1, 1, 1}, {3, -3});
  checkExact(run(OpKind::GlobalAvgPool, {f32({1, 1, 3, 2}, {1, 10, 2, 20, 3, 30})},
                 {{"layout", std::string("nhwc")}}),
             DType::F32, {1, 1, 1, 2}, {2, 20});
}
