// Host JIT tests of arithmetic semantics: integer division that never traps,
// wrapping, NaN-propagating float min/max with the reference's signed-zero
// behaviour, ordered/unordered comparisons, logic ops, select and negation,
// in scalar and vector form.
#include "HostTestUtil.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

using namespace kiln;
using namespace kiln::kir;
using kiln::testing::AlignedVector;
using kiln::testing::JitKernel;
using kiln::testing::sameFloat;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

/// out[i] = a[i] <op> b[i], `lanes` elements at a time.
template <typename Out, typename In>
AlignedVector<Out> applyBinary(BinaryOp op, DType dtype, const AlignedVector<In> &a,
                               const AlignedVector<In> &b, int lanes = 1) {
  int64_t n = static_cast<int64_t>(a.size());
  REQUIRE(b.size() == a.size());
  REQUIRE(n % lanes == 0);
  DType outType = isComparison(op) ? DType::Bool : dtype;
  auto bufA = makeBuffer("a", dtype, n);
  auto bufB = makeBuffer("b", dtype, n);
  auto out = makeBuffer("out", outType, n);
  auto i = makeVar("i");
  ExprPtr at = mul(kir::ref(i), index(lanes));
  StmtPtr body = store(out, at, binary(op, load(bufA, at, lanes), load(bufB, at, lanes)));
  JitKernel kernel(
      Kernel{fmt::format("binary_{}_{}_x{}", static_cast<int>(op), dtypeName(dtype), lanes),
             {bufA, bufB, out},
             forRange(i, n / lanes, ForKind::Serial, body)});
  AlignedVector<Out> result(a.size());
  kernel({const_cast<In *>(a.data()), const_cast<In *>(b.data()), result.data()});
  return result;
}

template <typename T> T graphDivide(T a, T b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
  return static_cast<T>(a / b);
}

template <typename T> T graphRemainder(T a, T b) {
  if (b == 0 || b == -1)
    return 0;
  return static_cast<T>(a % b);
}

double referenceMax(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return kNaN;
  return a > b ? a : b;
}

double referenceMin(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return kNaN;
  return a < b ? a : b;
}

template <typename T> void checkIntegerDivision(DType dtype) {
  using Lim = std::numeric_limits<T>;
  AlignedVector<T> a{7, -7, 7,   -7,         Lim::min(), Lim::min(), Lim::max(), 0,
                     5, -5, 100, Lim::min(), 3,          -3,         1,          Lim::max()};
  AlignedVector<T> b{2, 2, -2, -2, -1, 1, -1, 0, 0, 0, 7, 0, 3, 4, -1, Lim::max()};
  for (int lanes : {1, 4}) {
    auto quotient = applyBinary<T>(BinaryOp::Div, dtype, a, b, lanes);
    auto remainder = applyBinary<T>(BinaryOp::Mod, dtype, a, b, lanes);
    for (size_t k = 0; k < a.size(); ++k) {
      INFO(+a[k] << " / " << +b[k]);
      REQUIRE(quotient[k] == graphDivide(a[k], b[k]));
      REQUIRE(remainder[k] == graphRemainder(a[k], b[k]));
    }
    // Truncation toward zero, hand-checked.
    CHECK(quotient[1] == -3);
    CHECK(remainder[1] == -1);
    CHECK(quotient[2] == -3);
    CHECK(remainder[2] == 1);
    CHECK(quotient[4] == Lim::min()); // INT_MIN / -1 wraps
    CHECK(quotient[7] == 0);          // 0 / 0
    CHECK(quotient[8] == 0);          // x / 0
  }
}

} // namespace

TEST_CASE("integer div/mod truncate and never trap", "[codegen][host][arith]") {
  checkIntegerDivision<int32_t>(DType::I32);
  checkIntegerDivision<int64_t>(DType::I64);
  checkIntegerDivision<int8_t>(DType::I8);
}

TEST_CASE("integer division by constants", "[codegen][host][arith]") {
  const int64_t n = 21;
  auto in = makeBuffer("in", DType::I32, n);
  auto out = makeBuffer("out", DType::I32, 4 * n);
  auto i = makeVar("i");
  Type i32 = Type::scalar(DType::I32);
  ExprPtr x = load(in, kir::ref(i));
  StmtPtr body =
      seq({store(out, mul(kir::ref(i), index(4)), div(x, intImm(7, i32))),
           store(out, add(mul(kir::ref(i), index(4)), index(1)), mod(x, intImm(7, i32))),
           store(out, add(mul(kir::ref(i), index(4)), index(2)), div(x, intImm(-3, i32))),
           store(out, add(mul(kir::ref(i), index(4)), index(3)), div(x, intImm(-1, i32)))});
  JitKernel kernel(Kernel{"const_div", {in, out}, forRange(i, n, ForKind::Serial, body)});
  AlignedVector<int32_t> input(n), result(4 * n);
  for (int64_t k = 0; k < n; ++k)
    input[k] = static_cast<int32_t>((k - 10) * 5);
  input[0] = INT32_MIN;
  kernel({input.data(), result.data()});
  for (int64_t k = 0; k < n; ++k) {
    REQUIRE(result[4 * k] == input[k] / 7);
    REQUIRE(result[4 * k + 1] == input[k] % 7);
    REQUIRE(result[4 * k + 2] == input[k] / -3);
    REQUIRE(result[4 * k + 3] == graphDivide(input[k], -1));
  }
}

TEST_CASE("integer add/sub/mul/neg wrap", "[codegen][host][arith]") {
  AlignedVector<int32_t> a{INT32_MAX, INT32_MIN, 65536, -65536, 123456789, -1, 0, 46341};
  AlignedVector<int32_t> b{1, 1, 65536, 65536, 1000, INT32_MIN, INT32_MIN, 46341};
  auto sum = applyBinary<int32_t>(BinaryOp::Add, DType::I32, a, b, 8);
  auto difference = applyBinary<int32_t>(BinaryOp::Sub, DType::I32, a, b, 1);
  auto product = applyBinary<int32_t>(BinaryOp::Mul, DType::I32, a, b, 4);
  for (size_t k = 0; k < a.size(); ++k) {
    auto ua = static_cast<uint32_t>(a[k]), ub = static_cast<uint32_t>(b[k]);
    REQUIRE(sum[k] == static_cast<int32_t>(ua + ub));
    REQUIRE(difference[k] == static_cast<int32_t>(ua - ub));
    REQUIRE(product[k] == static_cast<int32_t>(ua * ub));
  }
  CHECK(sum[0] == INT32_MIN);
  CHECK(product[2] == 0); // 2^32 wraps to 0
  AlignedVector<int8_t> c{127, -128, 100, -100}, d{1, -1, 100, -100};
  CHECK(applyBinary<int8_t>(BinaryOp::Add, DType::I8, c, d) ==
        AlignedVector<int8_t>{-128, 127, -56, 56});
  CHECK(applyBinary<int8_t>(BinaryOp::Mul, DType::I8, c, d, 4) ==
        AlignedVector<int8_t>{127, -128, 16, 16});

  auto in = makeBuffer("in", DType::I32, 4);
  auto out = makeBuffer("out", DType::I32, 4);
  JitKernel negate(
      Kernel{"negate_i32", {in, out}, store(out, index(0), neg(load(in, index(0), 4)))});
  AlignedVector<int32_t> values{INT32_MIN, 5, -7, 0}, negated(4);
  negate({values.data(), negated.data()});
  CHECK(negated == AlignedVector<int32_t>{INT32_MIN, -5, 7, 0});
}

TEST_CASE("float min/max propagate NaN and match the reference on signed zeros",
          "[codegen][host][arith]") {
  std::vector<double> values{kNaN, -kNaN, kInf, -kInf, 0.0, -0.0, 1.5, -1.5, 3.0};
  AlignedVector<double> a64, b64;
  for (double x : values)
    for (double y : values) {
      a64.push_back(x);
      b64.push_back(y);
    }
  while (a64.size() % 8 != 0) {
    a64.push_back(2.0);
    b64.push_back(kNaN);
  }
  AlignedVector<float> a32(a64.begin(), a64.end()), b32(b64.begin(), b64.end());
  for (int lanes : {1, 8}) {
    auto max32 = applyBinary<float>(BinaryOp::Max, DType::F32, a32, b32, lanes);
    auto min32 = applyBinary<float>(BinaryOp::Min, DType::F32, a32, b32, lanes);
    auto max64 = applyBinary<double>(BinaryOp::Max, DType::F64, a64, b64, lanes);
    auto min64 = applyBinary<double>(BinaryOp::Min, DType::F64, a64, b64, lanes);
    for (size_t k = 0; k < a64.size(); ++k) {
      INFO("max/min(" << a64[k] << ", " << b64[k] << ")");
      REQUIRE(sameFloat(max32[k], referenceMax(a64[k], b64[k])));
      REQUIRE(sameFloat(min32[k], referenceMin(a64[k], b64[k])));
      REQUIRE(sameFloat(max64[k], referenceMax(a64[k], b64[k])));
      REQUIRE(sameFloat(min64[k], referenceMin(a64[k], b64[k])));
    }
  }
  // Hand-checked: max(-0, +0) is the second operand, max(+0, -0) too.
  AlignedVector<float> z1{-0.0f, 0.0f, 1.0f, NAN}, z2{0.0f, -0.0f, NAN, 1.0f};
  auto m = applyBinary<float>(BinaryOp::Max, DType::F32, z1, z2);
  CHECK(!std::signbit(m[0]));
  CHECK(std::signbit(m[1]));
  CHECK(std::isnan(m[2]));
  CHECK(std::isnan(m[3]));
}

TEST_CASE("integer and bool min/max", "[codegen][host][arith]") {
  AlignedVector<int64_t> a{-5, 5, INT64_MIN, INT64_MAX}, b{3, -3, 0, 0};
  CHECK(applyBinary<int64_t>(BinaryOp::Max, DType::I64, a, b, 4) ==
        AlignedVector<int64_t>{3, 5, 0, INT64_MAX});
  CHECK(applyBinary<int64_t>(BinaryOp::Min, DType::I64, a, b) ==
        AlignedVector<int64_t>{-5, -3, INT64_MIN, 0});
  AlignedVector<uint8_t> p{0, 0, 1, 1}, q{0, 1, 0, 1};
  CHECK(applyBinary<uint8_t>(BinaryOp::Max, DType::Bool, p, q) ==
        AlignedVector<uint8_t>{0, 1, 1, 1});
  CHECK(applyBinary<uint8_t>(BinaryOp::Min, DType::Bool, p, q, 4) ==
        AlignedVector<uint8_t>{0, 0, 0, 1});
  CHECK(applyBinary<uint8_t>(BinaryOp::Lt, DType::Bool, p, q) ==
        AlignedVector<uint8_t>{0, 1, 0, 0});
}

TEST_CASE("float comparisons are ordered except !=", "[codegen][host][arith]") {
  AlignedVector<float> a{1.0f, NAN, 1.0f, NAN, -0.0f, 2.0f, -1.0f, INFINITY};
  AlignedVector<float> b{1.0f, 1.0f, NAN, NAN, 0.0f, 1.0f, 1.0f, INFINITY};
  for (int lanes : {1, 8}) {
    CHECK(applyBinary<uint8_t>(BinaryOp::Eq, DType::F32, a, b, lanes) ==
          AlignedVector<uint8_t>{1, 0, 0, 0, 1, 0, 0, 1});
    CHECK(applyBinary<uint8_t>(BinaryOp::Ne, DType::F32, a, b, lanes) ==
          AlignedVector<uint8_t>{0, 1, 1, 1, 0, 1, 1, 0});
    CHECK(applyBinary<uint8_t>(BinaryOp::Lt, DType::F32, a, b, lanes) ==
          AlignedVector<uint8_t>{0, 0, 0, 0, 0, 0, 1, 0});
    CHECK(applyBinary<uint8_t>(BinaryOp::Le, DType::F32, a, b, lanes) ==
          AlignedVector<uint8_t>{1, 0, 0, 0, 1, 0, 1, 1});
    CHECK(applyBinary<uint8_t>(BinaryOp::Gt, DType::F32, a, b, lanes) ==
          AlignedVector<uint8_t>{0, 0, 0, 0, 0, 1, 0, 0});
    CHECK(applyBinary<uint8_t>(BinaryOp::Ge, DType::F32, a, b, lanes) ==
          AlignedVector<uint8_t>{1, 0, 0, 0, 1, 1, 0, 1});
  }
  AlignedVector<int32_t> x{-1, 0, 5, INT32_MIN}, y{0, 0, -5, INT32_MAX};
  CHECK(applyBinary<uint8_t>(BinaryOp::Lt, DType::I32, x, y, 4) ==
        AlignedVector<uint8_t>{1, 0, 0, 1});
  CHECK(applyBinary<uint8_t>(BinaryOp::Ge, DType::I32, x, y) == AlignedVector<uint8_t>{0, 1, 1, 0});
}

TEST_CASE("and/or/not on bools and integers", "[codegen][host][arith]") {
  AlignedVector<uint8_t> p{0, 0, 1, 1}, q{0, 1, 0, 1};
  CHECK(applyBinary<uint8_t>(BinaryOp::And, DType::Bool, p, q, 4) ==
        AlignedVector<uint8_t>{0, 0, 0, 1});
  CHECK(applyBinary<uint8_t>(BinaryOp::Or, DType::Bool, p, q) ==
        AlignedVector<uint8_t>{0, 1, 1, 1});
  AlignedVector<int32_t> x{0x0ff0, -1, 6, 0}, y{0x00ff, 12345, 3, -1};
  CHECK(applyBinary<int32_t>(BinaryOp::And, DType::I32, x, y) ==
        AlignedVector<int32_t>{0x00f0, 12345, 2, 0});
  CHECK(applyBinary<int32_t>(BinaryOp::Or, DType::I32, x, y, 4) ==
        AlignedVector<int32_t>{0x0fff, -1, 7, -1});

  auto in = makeBuffer("in", DType::Bool, 4);
  auto out = makeBuffer("out", DType::Bool, 4);
  auto i = makeVar("i");
  JitKernel notKernel(Kernel{
      "not_bool",
      {in, out},
      forRange(i, 4, ForKind::Serial, store(out, kir::ref(i), logicalNot(load(in, kir::ref(i)))))});
  AlignedVector<uint8_t> flags{0, 1, 1, 0}, negated(4, 7);
  notKernel({flags.data(), negated.data()});
  CHECK(negated == AlignedVector<uint8_t>{1, 0, 0, 1}); // stored as exactly 0/1
}

TEST_CASE("select with vector and scalar conditions", "[codegen][host][arith]") {
  const int lanes = 8;
  auto a = makeBuffer("a", DType::F32, lanes);
  auto b = makeBuffer("b", DType::F32, lanes);
  auto outVector = makeBuffer("out_vector", DType::F32, lanes);
  auto outScalar = makeBuffer("out_scalar", DType::F32, lanes);
  auto flag = makeBuffer("flag", DType::Bool, 1);
  ExprPtr va = load(a, index(0), lanes), vb = load(b, index(0), lanes);
  StmtPtr body = seq({store(outVector, index(0), select(gt(va, vb), va, vb)),
                      store(outScalar, index(0), select(load(flag, index(0)), va, vb))});
  JitKernel kernel(Kernel{"selects", {a, b, flag, outVector, outScalar}, body});
  AlignedVector<float> x{1, 5, -2, 7, 0, 9, 3, -4}, y{2, 4, -3, 8, 1, -9, 3, -5};
  AlignedVector<float> vectorResult(lanes), scalarResult(lanes);
  for (uint8_t f : {0, 1}) {
    AlignedVector<uint8_t> flagValue{f};
    kernel({x.data(), y.data(), flagValue.data(), vectorResult.data(), scalarResult.data()});
    CHECK(vectorResult == AlignedVector<float>{2, 5, -2, 8, 1, 9, 3, -4});
    CHECK(scalarResult == (f ? x : y));
  }
}

TEST_CASE("float arithmetic, negation and fmod", "[codegen][host][arith]") {
  AlignedVector<double> a{7.5, -7.5, 1e308, 0.0, 1.0, -0.0, 3.0, 5.0};
  AlignedVector<double> b{2.0, 2.0, 10.0, 0.0, 3.0, 1.0, -0.0, -3.0};
  auto quotient = applyBinary<double>(BinaryOp::Div, DType::F64, a, b, 8);
  auto remainder = applyBinary<double>(BinaryOp::Mod, DType::F64, a, b);
  auto product = applyBinary<double>(BinaryOp::Mul, DType::F64, a, b, 4);
  for (size_t k = 0; k < a.size(); ++k) {
    REQUIRE(sameFloat(quotient[k], a[k] / b[k]));
    REQUIRE(sameFloat(remainder[k], std::fmod(a[k], b[k])));
    REQUIRE(sameFloat(product[k], a[k] * b[k]));
  }
  auto in = makeBuffer("in", DType::F32, 4);
  auto out = makeBuffer("out", DType::F32, 4);
  JitKernel negate(
      Kernel{"negate_f32", {in, out}, store(out, index(0), neg(load(in, index(0), 4)))});
  AlignedVector<float> values{0.0f, -0.0f, 2.5f, INFINITY}, negated(4);
  negate({values.data(), negated.data()});
  CHECK(std::signbit(negated[0]));
  CHECK(!std::signbit(negated[1]));
  CHECK(negated[2] == -2.5f);
  CHECK(negated[3] == -INFINITY);
}
