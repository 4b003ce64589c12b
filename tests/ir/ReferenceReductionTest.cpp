// Reference interpreter: reductions over axes (negative axes, keepdims,
// several axes, odd sizes), NaN propagation, integer wrap, f16 rounding of an
// fp64 accumulation, and argmax/argmin's first-index rule.
#include "ir/ReferenceTestUtil.h"

#include <limits>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::test;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

AttrMap axes(std::vector<int64_t> list, bool keepdims = false) {
  return {{"axes", std::move(list)}, {"keepdims", keepdims}};
}

// x = [[1, 2, 3], [4, 5, 6]]
HostTensor matrix() { return f32({2, 3}, {1, 2, 3, 4, 5, 6}); }
} // namespace

TEST_CASE("reduce_sum over one, negative and all axes", "[reference][op:reduce_sum]") {
  checkExact(run(OpKind::ReduceSum, {matrix()}, axes({1})), DType::F32, {2}, {6, 15});
  checkExact(run(OpKind::ReduceSum, {matrix()}, axes({-1})), DType::F32, {2}, {6, 15});
  checkExact(run(OpKind::ReduceSum, {matrix()}, axes({0}, true)), DType::F32, {1, 3}, {5, 7, 9});
  checkExact(run(OpKind::ReduceSum, {matrix()}, axes({0, 1})), DType::F32, {}, {21});
  checkExact(run(OpKind::ReduceSum, {matrix()}, axes({1, 0}, true)), DType::F32, {1, 1}, {21});
}

TEST_CASE("reduce_sum of [3,4,5] over axes {0,2} with keepdims", "[reference][op:reduce_sum]") {
  Rng rng(11);
  HostTensor x = HostTensor::randomUniform(DType::F64, {3, 4, 5}, rng);
  std::vector<double> expected(4, 0.0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k)
        expected[j] += x.getDouble((i * 4 + j) * 5 + k);
  checkClose(run(OpKind::ReduceSum, {x}, axes({0, -1}, true)), {1, 4, 1}, expected);
}

TEST_CASE("reduce_sum accumulates in fp64 and rounds once to f16", "[reference][op:reduce_sum]") {
  // f16 spacing at 2048 is 2. 2048 + 1 is a tie that rounds to even (2048);
  // 2048 + 1 + 1 = 2050 is exact, which an f16 running sum would miss.
  HostTensor x = tensor(DType::F16, {2, 3}, {2048, 1, 0, 2048, 1, 1});
  checkExact(run(OpKind::ReduceSum, {x}, axes({1})), DType::F16, {2}, {2048, 2050});
}

TEST_CASE("integer reduce_sum and reduce_prod wrap", "[reference][op:reduce_sum][op:reduce_prod]") {
  checkExact(run(OpKind::ReduceSum, {tensor(DType::I8, {3}, {100, 100, 1})}, axes({0})), DType::I8,
             {}, {-55});
  // 2^16 * 2^16 = 2^32 wraps to 0 in i32.
  checkExact(run(OpKind::ReduceProd, {tensor(DType::I32, {2}, {65536, 65536})}, axes({0})),
             DType::I32, {}, {0});
  // 2^31 * 2^31 * 3 = 3 * 2^62 wraps to -2^62 in i64.
  checkExact(run(OpKind::ReduceProd, {tensor(DType::I64, {3}, {2147483648.0, 2147483648.0, 3})},
                 axes({0})),
             DType::I64, {}, {-4611686018427387904.0});
}

TEST_CASE("reduce_prod on floats", "[reference][op:reduce_prod]") {
  checkExact(run(OpKind::ReduceProd, {matrix()}, axes({1})), DType::F32, {2}, {6, 120});
  checkExact(run(OpKind::ReduceProd, {matrix()}, axes({-2}, true)), DType::F32, {1, 3},
             {4, 10, 18});
}

TEST_CASE("reduce_mean", "[reference][op:reduce_mean]") {
  checkExact(run(OpKind::ReduceMean, {matrix()}, axes({0})), DType::F32, {3}, {2.5, 3.5, 4.5});
  checkExact(run(OpKind::ReduceMean, {matrix()}, axes({0, 1}, true)), DType::F32, {1, 1}, {3.5});
  // 1/3 rounded to f32 once.
  checkExact(run(OpKind::ReduceMean, {f32({3}, {1, 0, 0})}, axes({0})), DType::F32, {},
             {static_cast<double>(1.0f / 3.0f)});
}

TEST_CASE("reduce_max and reduce_min propagate NaN", "[reference][op:reduce_max][op:reduce_min]") {
  HostTensor x = f32({2, 3}, {1, kNaN, 3, 4, 5, -6});
  checkExact(run(OpKind::ReduceMax, {x}, axes({1})), DType::F32, {2}, {kNaN, 5});
  checkExact(run(OpKind::ReduceMax, {x}, axes({0}, true)), DType::F32, {1, 3}, {4, kNaN, 3});
  checkExact(run(OpKind::ReduceMin, {x}, axes({1})), DType::F32, {2}, {kNaN, -6});
  checkExact(run(OpKind::ReduceMin, {x}, axes({-2})), DType::F32, {3}, {1, kNaN, -6});
  checkExact(run(OpKind::ReduceMax, {tensor(DType::I32, {2, 2}, {-5, -7, 3, -1})}, axes({1})),
             DType::I32, {2}, {-5, 3});
}

TEST_CASE("argmax and argmin return the first extreme index", "[reference][op:argmax][op:argmin]") {
  HostTensor x = f32({2, 3}, {1, 3, 3, 2, 0, 0});
  checkExact(run(OpKind::ArgMax, {x}, {{"axis", int64_t{1}}}), DType::I64, {2}, {1, 0});
  checkExact(run(OpKind::ArgMin, {x}, {{"axis", int64_t{1}}}), DType::I64, {2}, {0, 1});
  checkExact(run(OpKind::ArgMax, {x}, {{"axis", int64_t{-1}}, {"keepdims", true}}), DType::I64,
             {2, 1}, {1, 0});
  // Along axis 0 of [[1,5],[3,2],[3,7]].
  HostTensor columns = f32({3, 2}, {1, 5, 3, 2, 3, 7});
  checkExact(run(OpKind::ArgMax, {columns}, {{"axis", int64_t{-2}}}), DType::I64, {2}, {1, 2});
  checkExact(run(OpKind::ArgMin, {columns}, {{"axis", int64_t{0}}, {"keepdims", true}}), DType::I64,
             {1, 2}, {0, 1});
}

TEST_CASE("argmax and argmin pick the first NaN, as NumPy does",
          "[reference][op:argmax][op:argmin]") {
  HostTensor x = f32({2, 3}, {1, kNaN, kNaN, 5, 0, kNaN});
  checkExact(run(OpKind::ArgMax, {x}, {{"axis", int64_t{1}}}), DType::I64, {2}, {1, 2});
  checkExact(run(OpKind::ArgMin, {x}, {{"axis", int64_t{1}}}), DType::I64, {2}, {1, 2});
}
