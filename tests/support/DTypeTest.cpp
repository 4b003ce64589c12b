// Tests of DType names, sizes and classes, of roundToDType's per-dtype
// rounding, wrapping and special-value rules, and of convertFloatToInteger's
// saturation.
#include "support/DType.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace kiln;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
double pow2(int exponent) { return std::ldexp(1.0, exponent); }
} // namespace

TEST_CASE("dtype names round-trip and unknown names are rejected", "[dtype]") {
  const DType all[] = {DType::F64,    DType::F32, DType::F16, DType::BF16, DType::F8E4M3,
                       DType::F8E5M2, DType::I64, DType::I32, DType::I8,   DType::Bool};
  STATIC_REQUIRE(kNumDTypes == 10);
  for (DType type : all) {
    INFO("dtype " << dtypeName(type));
    auto parsed = parseDType(dtypeName(type));
    REQUIRE(parsed.has_value());
    CHECK(*parsed == type);
  }
  CHECK(dtypeName(DType::BF16) == "bf16");
  CHECK(dtypeName(DType::F8E4M3) == "f8e4m3");
  CHECK(dtypeName(DType::Bool) == "bool");
  CHECK_FALSE(parseDType("float32").has_value());
  CHECK_FALSE(parseDType("F32").has_value());
  CHECK_FALSE(parseDType("").has_value());
  CHECK_FALSE(parseDType("f8").has_value());
}

TEST_CASE("dtype sizes and classes", "[dtype]") {
  CHECK(dtypeByteSize(DType::F64) == 8);
  CHECK(dtypeByteSize(DType::F32) == 4);
  CHECK(dtypeByteSize(DType::F16) == 2);
  CHECK(dtypeByteSize(DType::BF16) == 2);
  CHECK(dtypeByteSize(DType::F8E4M3) == 1);
  CHECK(dtypeByteSize(DType::F8E5M2) == 1);
  CHECK(dtypeByteSize(DType::I64) == 8);
  CHECK(dtypeByteSize(DType::I32) == 4);
  CHECK(dtypeByteSize(DType::I8) == 1);
  CHECK(dtypeByteSize(DType::Bool) == 1);
  CHECK(isFloatingPoint(DType::BF16));
  CHECK(isFloatingPoint(DType::F8E5M2));
  CHECK_FALSE(isFloatingPoint(DType::I32));
  CHECK_FALSE(isFloatingPoint(DType::Bool));
  CHECK(isInteger(DType::I8));
  CHECK_FALSE(isInteger(DType::Bool));
  CHECK_FALSE(isInteger(DType::F64));
  CHECK(isBool(DType::Bool));
  CHECK_FALSE(isBool(DType::I8));
}

TEST_CASE("roundToDType rounds floats to nearest even", "[dtype]") {
  CHECK(roundToDType(0.1, DType::F64) == 0.1);
  CHECK(roundToDType(0.1, DType::F32) == static_cast<double>(0.1f));
  CHECK(roundToDType(1.0 + pow2(-24), DType::F32) == 1.0);                 // tie to even
  CHECK(roundToDType(1.0 + 3 * pow2(-24), DType::F32) == 1.0 + pow2(-22)); // tie up
  CHECK(std::isinf(roundToDType(1e39, DType::F32)));
  CHECK(roundToDType(0.1, DType::F16) == 0x1.998p-4);
  CHECK(roundToDType(65519.0, DType::F16) == 65504.0);
  CHECK(roundToDType(65520.0, DType::F16) == kInf);
  CHECK(roundToDType(pow2(-25), DType::F16) == 0.0);
  CHECK(roundToDType(3.0e38, DType::BF16) == 226 * pow2(120));            // 3e38 = 225.69 * 2^120
  CHECK(roundToDType(3.0 + pow2(-7), DType::BF16) == 3.0);                // tie to even
  CHECK(roundToDType(3.0 + 3 * pow2(-7), DType::BF16) == 3.0 + pow2(-5)); // tie up
  CHECK(roundToDType(1.0 + pow2(-8), DType::BF16) == 1.0);
  CHECK(roundToDType(1000.0, DType::F8E4M3) == 448.0);
  CHECK(roundToDType(-1000.0, DType::F8E4M3) == -448.0);
  // fp8 saturates like cvt.rn.satfinite: inf and overflow give max finite.
  CHECK(roundToDType(kInf, DType::F8E4M3) == 448.0);
  CHECK(roundToDType(-kInf, DType::F8E4M3) == -448.0);
  CHECK(std::isnan(roundToDType(kNaN, DType::F8E4M3)));
  CHECK(roundToDType(1e6, DType::F8E5M2) == 57344.0);
  CHECK(roundToDType(-kInf, DType::F8E5M2) == -57344.0);
  CHECK(std::isnan(roundToDType(kNaN, DType::F8E5M2)));
  CHECK(roundToDType(0.3, DType::F8E5M2) == 0.3125); // 1.25 * 2^-2
  CHECK(std::isnan(roundToDType(kNaN, DType::F16)));
  CHECK(std::signbit(roundToDType(-0.0, DType::F16)));
}

// roundToDType's integer rule models storing values that are already integers
// (integer arithmetic, int -> int casts); float -> integer casts saturate
// instead (convertFloatToInteger, below).
TEST_CASE("roundToDType truncates and wraps integers", "[dtype]") {
  CHECK(roundToDType(3.7, DType::I32) == 3.0);
  CHECK(roundToDType(-3.7, DType::I32) == -3.0);
  CHECK(roundToDType(-0.5, DType::I8) == 0.0);
  CHECK(roundToDType(127.9, DType::I8) == 127.0);
  CHECK(roundToDType(128.0, DType::I8) == -128.0);
  CHECK(roundToDType(255.0, DType::I8) == -1.0);
  CHECK(roundToDType(256.0, DType::I8) == 0.0);
  CHECK(roundToDType(-129.0, DType::I8) == 127.0);
  CHECK(roundToDType(-1000.5, DType::I8) == 24.0); // -1000 = -4*256 + 24
  CHECK(roundToDType(pow2(31), DType::I32) == -pow2(31));
  CHECK(roundToDType(pow2(32) + 5, DType::I32) == 5.0);
  CHECK(roundToDType(-pow2(31) - 1, DType::I32) == pow2(31) - 1);
  CHECK(roundToDType(pow2(63), DType::I64) == -pow2(63));
  CHECK(roundToDType(pow2(64) + pow2(12), DType::I64) == pow2(12));
  CHECK(roundToDType(pow2(64) - pow2(11), DType::I64) == -pow2(11));
  CHECK(roundToDType(-pow2(63), DType::I64) == -pow2(63));
  CHECK(roundToDType(pow2(70) + pow2(30), DType::I64) == pow2(30));
  CHECK(roundToDType(1e300, DType::I32) == 0.0); // a multiple of 2^64
  // NaN and infinities have no integer value: they become 0.
  CHECK(roundToDType(kNaN, DType::I64) == 0.0);
  CHECK(roundToDType(kInf, DType::I32) == 0.0);
  CHECK(roundToDType(-kInf, DType::I8) == 0.0);
}

TEST_CASE("convertFloatToInteger truncates and saturates like cvt.rzi", "[dtype]") {
  CHECK(convertFloatToInteger(3.7, DType::I32) == 3.0);
  CHECK(convertFloatToInteger(-3.7, DType::I32) == -3.0);
  CHECK(convertFloatToInteger(-0.5, DType::I8) == 0.0);
  CHECK(convertFloatToInteger(127.9, DType::I8) == 127.0);
  CHECK(convertFloatToInteger(128.0, DType::I8) == 127.0); // roundToDType would wrap to -128
  CHECK(convertFloatToInteger(300.7, DType::I8) == 127.0);
  CHECK(convertFloatToInteger(-128.9, DType::I8) == -128.0);
  CHECK(convertFloatToInteger(-1000.5, DType::I8) == -128.0);
  CHECK(convertFloatToInteger(pow2(31), DType::I32) == pow2(31) - 1);
  CHECK(convertFloatToInteger(pow2(31) - 0.5, DType::I32) == pow2(31) - 1);
  CHECK(convertFloatToInteger(-pow2(31) - 1, DType::I32) == -pow2(31));
  CHECK(convertFloatToInteger(-1e10, DType::I32) == -pow2(31));
  CHECK(convertFloatToInteger(1e300, DType::I32) == pow2(31) - 1);
  CHECK(convertFloatToInteger(kNaN, DType::I8) == 0.0);
  CHECK(convertFloatToInteger(-kNaN, DType::I32) == 0.0);
  CHECK(convertFloatToInteger(kNaN, DType::I64) == 0.0);
  CHECK(convertFloatToInteger(kInf, DType::I8) == 127.0);
  CHECK(convertFloatToInteger(-kInf, DType::I8) == -128.0);
  CHECK(convertFloatToInteger(kInf, DType::I32) == pow2(31) - 1);
  CHECK(convertFloatToInteger(-kInf, DType::I32) == -pow2(31));
  // i64: the minimum -2^63 is exact; the maximum is the largest fp64 below
  // 2^63, because INT64_MAX itself rounds to 2^63 in fp64.
  CHECK(kMaxI64AsDouble == pow2(63) - 1024);
  CHECK(std::nextafter(kMaxI64AsDouble, kInf) == pow2(63));
  CHECK(convertFloatToInteger(-kInf, DType::I64) == -pow2(63));
  CHECK(convertFloatToInteger(-1e30, DType::I64) == -pow2(63));
  CHECK(convertFloatToInteger(kInf, DType::I64) == kMaxI64AsDouble);
  CHECK(convertFloatToInteger(1e30, DType::I64) == kMaxI64AsDouble);
  CHECK(convertFloatToInteger(pow2(63), DType::I64) == kMaxI64AsDouble);
  CHECK(convertFloatToInteger(kMaxI64AsDouble, DType::I64) == kMaxI64AsDouble);
  CHECK(convertFloatToInteger(pow2(62) + 0.0, DType::I64) == pow2(62));
  CHECK(convertFloatToInteger(-123456789.75, DType::I64) == -123456789.0);
  // The saturated bounds survive the interpreter's later wrap unchanged.
  for (DType type : {DType::I8, DType::I32, DType::I64})
    for (double v : {kInf, -kInf, 1e300, -1e300}) {
      double converted = convertFloatToInteger(v, type);
      CHECK(roundToDType(converted, type) == converted);
    }
}

TEST_CASE("roundToDType to bool is x != 0", "[dtype]") {
  CHECK(roundToDType(0.0, DType::Bool) == 0.0);
  CHECK(roundToDType(-0.0, DType::Bool) == 0.0);
  CHECK(roundToDType(0.25, DType::Bool) == 1.0);
  CHECK(roundToDType(-7.0, DType::Bool) == 1.0);
  CHECK(roundToDType(kNaN, DType::Bool) == 1.0);
  CHECK(roundToDType(-kInf, DType::Bool) == 1.0);
}
