// Reference interpreter: every elementwise op against hand-computed values,
// NumPy broadcasting, NaN propagation, integer wrap and division, rounding of
// results to f16/bf16/integer dtypes, and saturating float -> int/fp8 casts.
// Transcendental expectations are the fp64 values of the formulas (checked to
// 1e-12 relative); the rest is exact.
#include "ir/ReferenceTestUtil.h"

#include <cstdint>
#include <limits>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::test;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
} // namespace

TEST_CASE("neg and abs, including integer wrap", "[reference][op:neg][op:abs]") {
  checkExact(run(OpKind::Neg, {f32({3}, {-2, 0.5, 3})}), DType::F32, {3}, {2, -0.5, -3});
  checkExact(run(OpKind::Neg, {tensor(DType::I32, {2}, {-2147483648.0, 5})}), DType::I32, {2},
             {-2147483648.0, -5});
  checkExact(run(OpKind::Abs, {f32({4}, {-2, 0.5, 0, -7.25})}), DType::F32, {4}, {2, 0.5, 0, 7.25});
  // |-128| = 128 does not fit in i8 and wraps back to -128.
  checkExact(run(OpKind::Abs, {tensor(DType::I8, {3}, {-128, -3, 4})}), DType::I8, {3},
             {-128, 3, 4});
}

TEST_CASE("exp, log, sqrt, rsqrt", "[reference][op:exp][op:log][op:sqrt][op:rsqrt]") {
  checkClose(run(OpKind::Exp, {f64({3}, {0, 1, -1})}), {3},
             {1, 2.718281828459045, 0.36787944117144233});
  checkExact(run(OpKind::Log, {f64({4}, {1, 0.5, 0, -1})}), DType::F64, {4},
             {0, -0.6931471805599453, -kInf, kNaN});
  checkExact(run(OpKind::Sqrt, {f64({4}, {4, 2, 0, -1})}), DType::F64, {4},
             {2, 1.4142135623730951, 0, kNaN});
  checkExact(run(OpKind::Rsqrt, {f64({3}, {4, 0.25, 0})}), DType::F64, {3}, {0.5, 2, kInf});
}

TEST_CASE("tanh, sigmoid, silu, erf", "[reference][op:tanh][op:sigmoid][op:silu][op:erf]") {
  checkClose(run(OpKind::Tanh, {f64({3}, {0, 0.5, -20})}), {3}, {0, 0.46211715726000974, -1});
  // sigmoid(-800): exp(800) overflows to inf, and 1 / inf is 0, not NaN.
  checkClose(run(OpKind::Sigmoid, {f64({3}, {0, 2, -800})}), {3}, {0.5, 0.8807970779778823, 0});
  checkClose(run(OpKind::Silu, {f64({3}, {1, -1, 0})}), {3},
             {0.7310585786300049, -0.2689414213699951, 0});
  checkClose(run(OpKind::Erf, {f64({3}, {0, 1, -0.5})}), {3},
             {0, 0.8427007929497149, -0.5204998778130465});
}

TEST_CASE("sin and cos", "[reference][op:sin][op:cos]") {
  const double pi = 3.141592653589793;
  checkClose(run(OpKind::Sin, {f64({3}, {0, pi / 2, pi / 6})}), {3}, {0, 1, 0.5}, 1e-15, 1e-15);
  checkClose(run(OpKind::Cos, {f64({3}, {0, pi, pi / 3})}), {3}, {1, -1, 0.5}, 1e-15, 1e-15);
}

TEST_CASE("relu keeps NaN and works on integers", "[reference][op:relu]") {
  checkExact(run(OpKind::Relu, {f32({4}, {-1, 0, 2.5, kNaN})}), DType::F32, {4}, {0, 0, 2.5, kNaN});
  checkExact(run(OpKind::Relu, {tensor(DType::I32, {3}, {-7, 0, 9})}), DType::I32, {3}, {0, 0, 9});
}

TEST_CASE("gelu in erf and tanh forms", "[reference][op:gelu]") {
  checkClose(run(OpKind::Gelu, {f64({4}, {1, -1, 2, 0})}), {4},
             {0.8413447460685429, -0.15865525393145707, 1.9544997361036416, 0});
  checkClose(run(OpKind::Gelu, {f64({4}, {1, -1, 2, 0})}, {{"approximate", std::string("tanh")}}),
             {4}, {0.8411919906082768, -0.15880800939172324, 1.954597694087775, 0});
}

TEST_CASE("not of bools", "[reference][op:not]") {
  checkExact(run(OpKind::Not, {tensor(DType::Bool, {3}, {1, 0, 1})}), DType::Bool, {3}, {0, 1, 0});
}

TEST_CASE("cast rounds, truncates and wraps", "[reference][op:cast]") {
  // Float to int truncates toward zero and saturates (cvt.rzi.s8.f32): 300.7 -> 127.
  checkExact(run(OpKind::Cast, {f32({6}, {1.7, -1.7, 2.5, 300.7, -0.5, -300.7})},
                 {{"dtype", DType::I8}}),
             DType::I8, {6}, {1, -1, 2, 127, 0, -128});
  // Int to int wraps (cvt.s8.s32 without .sat): 300 -> 44, -129 -> 127.
  checkExact(run(OpKind::Cast, {tensor(DType::I32, {3}, {300, -129, -5})}, {{"dtype", DType::I8}}),
             DType::I8, {3}, {44, 127, -5});
  // 0.1 to f16 is the nearest f16, 0.0999755859375.
  checkExact(run(OpKind::Cast, {f64({1}, {0.1})}, {{"dtype", DType::F16}}), DType::F16, {1},
             {0.0999755859375});
  // 1 + 2^-8 is halfway between two bf16 values; ties go to the even one, 1.0.
  checkExact(run(OpKind::Cast, {f64({2}, {1.00390625, 1.01171875})}, {{"dtype", DType::BF16}}),
             DType::BF16, {2}, {1.0, 1.015625});
  checkExact(run(OpKind::Cast, {f32({3}, {0, -0.5, kNaN})}, {{"dtype", DType::Bool}}), DType::Bool,
             {3}, {0, 1, 1});
  checkExact(run(OpKind::Cast, {tensor(DType::Bool, {2}, {1, 0})}, {{"dtype", DType::F32}}),
             DType::F32, {2}, {1, 0});
}

TEST_CASE("cast from float to integer saturates; NaN gives 0", "[reference][op:cast]") {
  const double i32Min = -2147483648.0;
  const double i32Max = 2147483647.0;
  checkExact(run(OpKind::Cast, {f32({6}, {-1e10, 1e10, kNaN, kInf, -kInf, -2147483648.0})},
                 {{"dtype", DType::I32}}),
             DType::I32, {6}, {i32Min, i32Max, 0, i32Max, i32Min, i32Min});
  // The same from f64 and f16 sources, and NaN / inf to i8.
  checkExact(run(OpKind::Cast, {f64({3}, {2147483647.9, -2147483648.9, 3e9})},
                 {{"dtype", DType::I32}}),
             DType::I32, {3}, {i32Max, i32Min, i32Max});
  checkExact(run(OpKind::Cast, {tensor(DType::F16, {4}, {kNaN, kInf, -kInf, 65504})},
                 {{"dtype", DType::I8}}),
             DType::I8, {4}, {0, 127, -128, 127});
  // Bool to int is not a float conversion: 1 stays 1.
  checkExact(run(OpKind::Cast, {tensor(DType::Bool, {2}, {1, 0})}, {{"dtype", DType::I8}}),
             DType::I8, {2}, {1, 0});
}

TEST_CASE("cast from float to i64 saturates to exact stored bounds", "[reference][op:cast]") {
  // The minimum -2^63 is exact. The maximum cannot be INT64_MAX: the
  // interpreter holds values in fp64, where 2^63 - 1 rounds to 2^63, out of
  // range; it is the largest fp64 below 2^63 (documented in DType.h).
  HostTensor result = run(OpKind::Cast, {f64({5}, {1e30, -1e30, kInf, -kInf, kNaN})},
                          {{"dtype", DType::I64}});
  checkExact(result, DType::I64, {5},
             {kMaxI64AsDouble, -9223372036854775808.0, kMaxI64AsDouble, -9223372036854775808.0, 0});
  auto stored = result.as<int64_t>();
  REQUIRE(stored.size() == 5);
  CHECK(stored[0] == INT64_C(9223372036854774784));
  CHECK(stored[1] == std::numeric_limits<int64_t>::min());
  CHECK(stored[2] == INT64_C(9223372036854774784));
  CHECK(stored[3] == std::numeric_limits<int64_t>::min());
  CHECK(stored[4] == 0);
  // In-range values keep their (fp64-exact) integer part.
  checkExact(run(OpKind::Cast, {f64({2}, {-4503599627370495.5, 1e18})}, {{"dtype", DType::I64}}),
             DType::I64, {2}, {-4503599627370495.0, 1e18});
}

TEST_CASE("cast to fp8 saturates like cvt.rn.satfinite", "[reference][op:cast]") {
  checkExact(run(OpKind::Cast, {f32({5}, {464, 1e6, kInf, -kInf, kNaN})},
                 {{"dtype", DType::F8E4M3}}),
             DType::F8E4M3, {5}, {448, 448, 448, -448, kNaN});
  checkExact(run(OpKind::Cast, {f32({5}, {61440, 1e9, kInf, -kInf, kNaN})},
                 {{"dtype", DType::F8E5M2}}),
             DType::F8E5M2, {5}, {57344, 57344, 57344, -57344, kNaN});
  // f16 keeps IEEE overflow: 65520 ties to even, which is inf.
  checkExact(run(OpKind::Cast, {f32({2}, {65520, -1e6})}, {{"dtype", DType::F16}}), DType::F16,
             {2}, {kInf, -kInf});
}

TEST_CASE("clamp, with NaN passing through", "[reference][op:clamp]") {
  checkExact(run(OpKind::Clamp, {f32({4}, {-3, 0.5, 5, kNaN})}, {{"min", -1.0}, {"max", 2.0}}),
             DType::F32, {4}, {-1, 0.5, 2, kNaN});
}

TEST_CASE("add broadcasts like NumPy", "[reference][op:add]") {
  // [2,3] + [3]
  checkExact(run(OpKind::Add, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})}),
             DType::F32, {2, 3}, {11, 22, 33, 14, 25, 36});
  // [2,1] + [1,3]: an outer sum.
  checkExact(run(OpKind::Add, {f32({2, 1}, {1, 2}), f32({1, 3}, {10, 20, 30})}), DType::F32, {2, 3},
             {11, 21, 31, 12, 22, 32});
  // A scalar operand.
  checkExact(run(OpKind::Add, {f32({}, {0.5}), f32({2}, {1, 2})}), DType::F32, {2}, {1.5, 2.5});
}

TEST_CASE("add broadcasts odd shapes [3,1,5] + [4,1]", "[reference][op:add]") {
  Rng rng(7);
  HostTensor a = HostTensor::randomUniform(DType::F64, {3, 1, 5}, rng);
  HostTensor b = HostTensor::randomUniform(DType::F64, {4, 1}, rng);
  std::vector<double> expected;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k)
        expected.push_back(a.getDouble(i * 5 + k) + b.getDouble(j));
  checkExact(run(OpKind::Add, {a, b}), DType::F64, {3, 4, 5}, expected);
}

TEST_CASE("add rounds the exact sum to f16 and bf16", "[reference][op:add]") {
  // 1 + 2^-11 lies halfway between f16 neighbours 1 and 1 + 2^-10: ties to even gives 1.
  // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  checkExact(run(OpKind::Add, {tensor(DType::F16, {2}, {1, 1}),
                               tensor(DType::F16, {2}, {0.00048828125, 0.00146484375})}),
             DType::F16, {2}, {1.0, 1.001953125});
  // bf16 has 8 significand bits: 256 + 1 is a tie between 256 and 258, giving 256; 256 + 3 -> 260.
  checkExact(
      run(OpKind::Add, {tensor(DType::BF16, {2}, {256, 256}), tensor(DType::BF16, {2}, {1, 3})}),
      DType::BF16, {2}, {256, 260});
}

TEST_CASE("integer add, sub and mul wrap to the dtype", "[reference][op:add][op:sub][op:mul]") {
  checkExact(
      run(OpKind::Add, {tensor(DType::I8, {2}, {100, -100}), tensor(DType::I8, {2}, {100, -100})}),
      DType::I8, {2}, {-56, 56});
  checkExact(
      run(OpKind::Add, {tensor(DType::I32, {1}, {2147483647}), tensor(DType::I32, {1}, {1})}),
      DType::I32, {1}, {-2147483648.0});
  checkExact(
      run(OpKind::Sub, {tensor(DType::I8, {2}, {-100, 5}), tensor(DType::I8, {2}, {100, 7})}),
      DType::I8, {2}, {56, -2});
  // (2^31 - 1)^2 = 2^62 - 2^32 + 1 is 1 modulo 2^32; an fp64 product would
  // have lost the low bits and given 0.
  checkExact(run(OpKind::Mul, {tensor(DType::I32, {2}, {2147483647, 65537}),
                               tensor(DType::I32, {2}, {2147483647, 65537})}),
             DType::I32, {2}, {1, 131073});
}

TEST_CASE("sub and mul on floats with broadcasting", "[reference][op:sub][op:mul]") {
  checkExact(run(OpKind::Sub, {f32({2}, {5, 1}), f32({2}, {2, 3})}), DType::F32, {2}, {3, -2});
  checkExact(run(OpKind::Mul, {f32({2, 2}, {1, 2, 3, 4}), f32({2, 1}, {10, -1})}), DType::F32,
             {2, 2}, {10, 20, -3, -4});
}

TEST_CASE("div: IEEE for floats, truncation and x/0 = 0 for integers", "[reference][op:div]") {
  checkExact(run(OpKind::Div, {f32({4}, {1, -1, 0, 7}), f32({4}, {0, 0, 0, 2})}), DType::F32, {4},
             {kInf, -kInf, kNaN, 3.5});
  checkExact(run(OpKind::Div, {tensor(DType::I32, {6}, {7, -7, 7, -7, 5, -2147483648.0}),
                               tensor(DType::I32, {6}, {2, 2, -2, -2, 0, -1})}),
             DType::I32, {6}, {3, -3, -3, 3, 0, -2147483648.0});
  checkExact(run(OpKind::Div, {tensor(DType::I64, {2}, {-9, 9}), tensor(DType::I64, {}, {4})}),
             DType::I64, {2}, {-2, 2});
}

TEST_CASE("pow", "[reference][op:pow]") {
  checkExact(run(OpKind::Pow, {f32({4}, {2, 4, 2, -8}), f32({4}, {3, 0.5, -1, 0})}), DType::F32,
             {4}, {8, 2, 0.5, 1});
}

TEST_CASE("max and min propagate NaN", "[reference][op:max][op:min]") {
  checkExact(run(OpKind::Max, {f32({4}, {1, kNaN, 3, -2}), f32({4}, {2, 0, kNaN, -5})}), DType::F32,
             {4}, {2, kNaN, kNaN, -2});
  checkExact(run(OpKind::Min, {f32({4}, {1, kNaN, 3, -2}), f32({4}, {2, 0, kNaN, -5})}), DType::F32,
             {4}, {1, kNaN, kNaN, -5});
  checkExact(run(OpKind::Max,
                 {tensor(DType::I32, {2, 2}, {1, 5, -3, 8}), tensor(DType::I32, {2}, {2, 6})}),
             DType::I32, {2, 2}, {2, 6, 2, 8});
}

TEST_CASE("comparisons give bools, NaN compares unequal",
          "[reference][op:eq][op:ne][op:lt][op:le][op:gt][op:ge]") {
  HostTensor a = f32({4}, {1, 2, 3, kNaN});
  HostTensor b = f32({1}, {2});
  checkExact(run(OpKind::Eq, {a, b}), DType::Bool, {4}, {0, 1, 0, 0});
  checkExact(run(OpKind::Ne, {a, b}), DType::Bool, {4}, {1, 0, 1, 1});
  checkExact(run(OpKind::Lt, {a, b}), DType::Bool, {4}, {1, 0, 0, 0});
  checkExact(run(OpKind::Le, {a, b}), DType::Bool, {4}, {1, 1, 0, 0});
  checkExact(run(OpKind::Gt, {a, b}), DType::Bool, {4}, {0, 0, 1, 0});
  checkExact(run(OpKind::Ge, {a, b}), DType::Bool, {4}, {0, 1, 1, 0});
  checkExact(
      run(OpKind::Lt, {tensor(DType::I32, {2, 1}, {1, 5}), tensor(DType::I32, {3}, {0, 1, 6})}),
      DType::Bool, {2, 3}, {0, 0, 1, 0, 0, 1});
}

TEST_CASE("and, or on bools with broadcasting", "[reference][op:and][op:or]") {
  HostTensor a = tensor(DType::Bool, {2, 1}, {1, 0});
  HostTensor b = tensor(DType::Bool, {1, 2}, {1, 0});
  checkExact(run(OpKind::And, {a, b}), DType::Bool, {2, 2}, {1, 0, 0, 0});
  checkExact(run(OpKind::Or, {a, b}), DType::Bool, {2, 2}, {1, 1, 1, 0});
}

TEST_CASE("where broadcasts all three operands", "[reference][op:where]") {
  checkExact(run(OpKind::Where,
                 {tensor(DType::Bool, {2, 1}, {1, 0}), f32({1, 3}, {1, 2, 3}), f32({}, {9})}),
             DType::F32, {2, 3}, {1, 2, 3, 9, 9, 9});
  checkExact(
      run(OpKind::Where, {tensor(DType::Bool, {3}, {0, 1, 0}), tensor(DType::I32, {3}, {1, 2, 3}),
                          tensor(DType::I32, {3}, {-1, -2, -3})}),
      DType::I32, {3}, {-1, 2, -3});
}
