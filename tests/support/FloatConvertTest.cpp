// Tests of the narrow float conversions against hand-derived bit patterns,
// plus exhaustive decode/encode round trips of every f16, bf16 and f8 pattern.
#include "support/FloatConvert.h"

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>

using namespace kiln;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
double pow2(int exponent) { return std::ldexp(1.0, exponent); }
} // namespace

TEST_CASE("f16 encodes edge values to known bit patterns", "[floatconvert]") {
  CHECK(doubleToHalfBits(1.0) == 0x3c00);
  CHECK(doubleToHalfBits(-2.0) == 0xc000);
  CHECK(doubleToHalfBits(65504.0) == 0x7bff);
  CHECK(doubleToHalfBits(65519.0) == 0x7bff); // just below the tie with 65536
  CHECK(doubleToHalfBits(65520.0) == 0x7c00); // the tie rounds to even: inf
  CHECK(doubleToHalfBits(-65520.0) == 0xfc00);
  CHECK(doubleToHalfBits(1e10) == 0x7c00);
  CHECK(doubleToHalfBits(pow2(-24)) == 0x0001);        // smallest subnormal
  CHECK(doubleToHalfBits(pow2(-25)) == 0x0000);        // tie between 0 and 2^-24: even is 0
  CHECK(doubleToHalfBits(-pow2(-25)) == 0x8000);       // keeps its sign
  CHECK(doubleToHalfBits(3 * pow2(-26)) == 0x0001);    // 0.75 quanta rounds up
  CHECK(doubleToHalfBits(3 * pow2(-25)) == 0x0002);    // 1.5 quanta: tie to even 2
  CHECK(doubleToHalfBits(1023 * pow2(-24)) == 0x03ff); // largest subnormal
  CHECK(doubleToHalfBits(pow2(-14)) == 0x0400);        // smallest normal
  // 1023.5 quanta ties to the even 1024 quanta: the carry makes it min normal.
  CHECK(doubleToHalfBits(1023.5 * pow2(-24)) == 0x0400);
  CHECK(doubleToHalfBits(-0.0) == 0x8000);
  CHECK(doubleToHalfBits(0.0) == 0x0000);
  CHECK(doubleToHalfBits(kInf) == 0x7c00);
  CHECK(doubleToHalfBits(-kInf) == 0xfc00);
  uint16_t nanBits = doubleToHalfBits(kNaN);
  CHECK((nanBits & 0x7c00) == 0x7c00);
  CHECK((nanBits & 0x03ff) != 0);
  CHECK(doubleToHalfBits(1.0 + pow2(-11)) == 0x3c00);             // tie: stays at even 1.0
  CHECK(doubleToHalfBits(1.0 + 3 * pow2(-11)) == 0x3c02);         // tie: up to even 1+2^-9
  CHECK(doubleToHalfBits(1.0 + pow2(-11) + pow2(-40)) == 0x3c01); // above the tie
  CHECK(doubleToHalfBits(4095 * pow2(-11)) == 0x4000); // 1+1023.5/1024 ties up, carrying to 2.0
}

TEST_CASE("f16 decodes bit patterns exactly", "[floatconvert]") {
  CHECK(halfBitsToFloat(0x7bff) == 65504.0f);
  CHECK(halfBitsToFloat(0x0001) == static_cast<float>(pow2(-24)));
  CHECK(halfBitsToFloat(0x03ff) == static_cast<float>(1023 * pow2(-24)));
  CHECK(halfBitsToFloat(0x0400) == static_cast<float>(pow2(-14)));
  CHECK(halfBitsToFloat(0x3555) == 0x1.554p-2f);
  CHECK(std::signbit(halfBitsToFloat(0x8000)));
  CHECK(halfBitsToFloat(0x8000) == 0.0f);
  CHECK(halfBitsToFloat(0x7c00) == std::numeric_limits<float>::infinity());
  CHECK(halfBitsToFloat(0xfc00) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(halfBitsToFloat(0x7e00)));
  CHECK(std::isnan(halfBitsToFloat(0x7c01)));
}

TEST_CASE("bf16 encodes edge values to known bit patterns", "[floatconvert]") {
  CHECK(doubleToBFloat16Bits(1.0) == 0x3f80);
  CHECK(doubleToBFloat16Bits(1.0 + pow2(-8)) == 0x3f80);     // tie to even
  CHECK(doubleToBFloat16Bits(1.0 + 3 * pow2(-8)) == 0x3f82); // tie up to even
  CHECK(doubleToBFloat16Bits(1.0 + pow2(-8) + pow2(-30)) == 0x3f81);
  double bf16Max = 255.0 * pow2(127 - 7); // (2 - 2^-7) * 2^127
  CHECK(doubleToBFloat16Bits(bf16Max) == 0x7f7f);
  CHECK(bfloat16BitsToFloat(0x7f7f) == static_cast<float>(bf16Max));
  // Halfway between max and 2^128 rounds to even (2^128): inf. Just below stays max.
  CHECK(doubleToBFloat16Bits(bf16Max + pow2(127 - 8)) == 0x7f80);
  CHECK(doubleToBFloat16Bits(bf16Max + pow2(127 - 8) - pow2(127 - 30)) == 0x7f7f);
  CHECK(doubleToBFloat16Bits(1e300) == 0x7f80);
  CHECK(doubleToBFloat16Bits(-1e300) == 0xff80);
  CHECK(doubleToBFloat16Bits(pow2(-133)) == 0x0001); // smallest subnormal
  CHECK(doubleToBFloat16Bits(pow2(-134)) == 0x0000); // tie to even 0
  CHECK(doubleToBFloat16Bits(pow2(-126)) == 0x0080); // smallest normal
  CHECK(doubleToBFloat16Bits(-0.0) == 0x8000);
  uint16_t nanBits = doubleToBFloat16Bits(kNaN);
  CHECK((nanBits & 0x7f80) == 0x7f80);
  CHECK((nanBits & 0x007f) != 0);
  CHECK(std::isnan(bfloat16BitsToFloat(0x7fc0)));
  CHECK(bfloat16BitsToFloat(0xc040) == -3.0f);
}

TEST_CASE("bf16 matches the top half of an fp32 with rounding", "[floatconvert]") {
  // For a float, RNE to bf16 is the classic add-0x7fff-plus-lsb trick.
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0x3f808001u, 0x40490fdbu, 0xc2f6e979u,
                        0x00012345u, 0x7f7fffffu, 0x80000001u}) {
    float value = std::bit_cast<float>(bits);
    uint32_t lsb = (bits >> 16) & 1;
    uint16_t expected = static_cast<uint16_t>((bits + 0x7fff + lsb) >> 16);
    INFO("fp32 bits 0x" << std::hex << bits);
    CHECK(floatToBFloat16Bits(value) == expected);
  }
}

TEST_CASE("f8e4m3 saturates like cvt.rn.satfinite and has one NaN", "[floatconvert]") {
  CHECK(doubleToF8E4M3Bits(1.0) == 0x38);
  CHECK(doubleToF8E4M3Bits(448.0) == 0x7e);
  CHECK(f8e4m3BitsToFloat(0x7e) == 448.0f);
  CHECK(doubleToF8E4M3Bits(416.0) == 0x7d);  // the value below max: 1.625 * 2^8
  CHECK(doubleToF8E4M3Bits(440.0) == 0x7e);  // above the 432 tie: rounds up to max normally
  CHECK(doubleToF8E4M3Bits(432.0) == 0x7e);  // tie between 416 (odd) and 448 (even)
  CHECK(doubleToF8E4M3Bits(449.0) == 0x7e);  // beyond max: clamps
  CHECK(doubleToF8E4M3Bits(464.0) == 0x7e);  // tie with the (NaN slot) 480: clamps
  CHECK(doubleToF8E4M3Bits(470.0) == 0x7e);  // would round to 480: clamps
  CHECK(doubleToF8E4M3Bits(1e6) == 0x7e);
  CHECK(doubleToF8E4M3Bits(1e300) == 0x7e);
  CHECK(doubleToF8E4M3Bits(-449.0) == 0xfe);
  CHECK(doubleToF8E4M3Bits(-1e6) == 0xfe);
  CHECK(doubleToF8E4M3Bits(kInf) == 0x7e);   // satfinite: inf becomes max, not NaN
  CHECK(doubleToF8E4M3Bits(-kInf) == 0xfe);
  CHECK(floatToF8E4M3Bits(std::numeric_limits<float>::infinity()) == 0x7e);
  CHECK(floatToF8E4M3Bits(-std::numeric_limits<float>::infinity()) == 0xfe);
  CHECK(floatToF8E4M3Bits(std::numeric_limits<float>::max()) == 0x7e);
  CHECK(floatToF8E4M3Bits(1e6f) == 0x7e);
  CHECK(doubleToF8E4M3Bits(kNaN) == 0x7f);
  CHECK(doubleToF8E4M3Bits(-kNaN) == 0xff);
  CHECK(std::isnan(f8e4m3BitsToFloat(floatToF8E4M3Bits(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(f8e4m3BitsToFloat(0x7f)));
  CHECK(std::isnan(f8e4m3BitsToFloat(0xff)));
  CHECK(f8e4m3BitsToFloat(0x78) == 256.0f);    // top exponent still finite
  CHECK(doubleToF8E4M3Bits(pow2(-9)) == 0x01); // smallest subnormal
  CHECK(f8e4m3BitsToFloat(0x01) == static_cast<float>(pow2(-9)));
  CHECK(doubleToF8E4M3Bits(pow2(-10)) == 0x00);          // tie to even 0
  CHECK(doubleToF8E4M3Bits(3 * pow2(-11)) == 0x01);      // 0.75 quanta
  CHECK(doubleToF8E4M3Bits(7 * pow2(-9)) == 0x07);       // largest subnormal
  CHECK(doubleToF8E4M3Bits(pow2(-6)) == 0x08);           // smallest normal
  CHECK(doubleToF8E4M3Bits(7.5 * pow2(-9)) == 0x08);     // carry into the exponent
  CHECK(doubleToF8E4M3Bits(1.0 + pow2(-4)) == 0x38);     // tie to even 1.0
  CHECK(doubleToF8E4M3Bits(1.0 + 3 * pow2(-4)) == 0x3a); // tie up to even
}

TEST_CASE("f8e5m2 saturates like cvt.rn.satfinite and decodes infinities", "[floatconvert]") {
  CHECK(doubleToF8E5M2Bits(1.0) == 0x3c);
  CHECK(doubleToF8E5M2Bits(57344.0) == 0x7b);
  CHECK(f8e5m2BitsToFloat(0x7b) == 57344.0f);
  CHECK(doubleToF8E5M2Bits(49152.0) == 0x7a); // the value below max: 1.5 * 2^15
  CHECK(doubleToF8E5M2Bits(53248.0) == 0x7a); // tie between 49152 (even) and 57344 (odd)
  CHECK(doubleToF8E5M2Bits(53249.0) == 0x7b); // above the tie: rounds up to max normally
  CHECK(doubleToF8E5M2Bits(57345.0) == 0x7b); // beyond max: clamps
  CHECK(doubleToF8E5M2Bits(61439.0) == 0x7b);
  CHECK(doubleToF8E5M2Bits(61440.0) == 0x7b); // IEEE would tie to even inf: clamps
  CHECK(doubleToF8E5M2Bits(1e9) == 0x7b);
  CHECK(doubleToF8E5M2Bits(-1e9) == 0xfb);
  CHECK(doubleToF8E5M2Bits(kInf) == 0x7b); // satfinite: inf becomes max
  CHECK(doubleToF8E5M2Bits(-kInf) == 0xfb);
  CHECK(floatToF8E5M2Bits(std::numeric_limits<float>::infinity()) == 0x7b);
  CHECK(floatToF8E5M2Bits(-std::numeric_limits<float>::infinity()) == 0xfb);
  CHECK(floatToF8E5M2Bits(-std::numeric_limits<float>::max()) == 0xfb);
  CHECK(floatToF8E5M2Bits(61440.0f) == 0x7b);
  // Decoding is unchanged: the inf patterns still mean inf.
  CHECK(f8e5m2BitsToFloat(0x7c) == std::numeric_limits<float>::infinity());
  CHECK(f8e5m2BitsToFloat(0xfc) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(f8e5m2BitsToFloat(0x7d)));
  uint8_t nanBits = doubleToF8E5M2Bits(kNaN);
  CHECK((nanBits & 0x7c) == 0x7c);
  CHECK((nanBits & 0x03) != 0);
  CHECK(std::isnan(f8e5m2BitsToFloat(nanBits)));
  CHECK(std::isnan(f8e5m2BitsToFloat(floatToF8E5M2Bits(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(doubleToF8E5M2Bits(pow2(-16)) == 0x01); // smallest subnormal
  CHECK(f8e5m2BitsToFloat(0x01) == static_cast<float>(pow2(-16)));
  CHECK(doubleToF8E5M2Bits(pow2(-17)) == 0x00);
  CHECK(doubleToF8E5M2Bits(pow2(-14)) == 0x04); // smallest normal
  CHECK(doubleToF8E5M2Bits(-0.0) == 0x80);
}

TEST_CASE("fp64 conversions round once, not through fp32", "[floatconvert]") {
  // 1 + 2^-11 + 2^-30 sits just above the f16 tie at 1 + 2^-11, so it rounds
  // up to 0x3c01. Rounded to fp32 first it would land exactly on the tie
  // (2^-30 is below fp32's half-ulp at 1.0) and then tie to even: 0x3c00.
  double justAboveTie = 1.0 + pow2(-11) + pow2(-30);
  REQUIRE(static_cast<double>(static_cast<float>(justAboveTie)) == 1.0 + pow2(-11));
  CHECK(doubleToHalfBits(justAboveTie) == 0x3c01);
  CHECK(floatToHalfBits(static_cast<float>(justAboveTie)) == 0x3c00);

  double bf16JustAboveTie = 1.0 + pow2(-8) + pow2(-40);
  REQUIRE(static_cast<float>(bf16JustAboveTie) == static_cast<float>(1.0 + pow2(-8)));
  CHECK(doubleToBFloat16Bits(bf16JustAboveTie) == 0x3f81);

  double f8JustAboveTie = 1.0 + pow2(-4) + pow2(-35);
  CHECK(doubleToF8E4M3Bits(f8JustAboveTie) == 0x39);
  CHECK(doubleToF8E5M2Bits(1.0 + pow2(-3) + pow2(-35)) == 0x3d);
}

TEST_CASE("f16 float overload agrees with the double overload", "[floatconvert]") {
  for (float value : {0.1f, -3.14159f, 6.1e-5f, 7e-8f, 65519.99f, 1e-10f, 123456.0f}) {
    INFO("value " << value);
    CHECK(floatToHalfBits(value) == doubleToHalfBits(value));
    CHECK(floatToF8E4M3Bits(value) == doubleToF8E4M3Bits(value));
    CHECK(floatToF8E5M2Bits(value) == doubleToF8E5M2Bits(value));
  }
}

TEST_CASE("every 16-bit pattern round-trips through f16 and bf16", "[floatconvert]") {
  int halfNaNs = 0;
  int bf16NaNs = 0;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    auto pattern = static_cast<uint16_t>(bits);
    float half = halfBitsToFloat(pattern);
    if (std::isnan(half)) {
      ++halfNaNs;
      CHECK(std::isnan(halfBitsToFloat(floatToHalfBits(half))));
    } else if (floatToHalfBits(half) != pattern || doubleToHalfBits(half) != pattern) {
      FAIL("f16 pattern 0x" << std::hex << bits << " did not round-trip");
    }
    float brain = bfloat16BitsToFloat(pattern);
    if (std::isnan(brain)) {
      ++bf16NaNs;
      CHECK(std::isnan(bfloat16BitsToFloat(floatToBFloat16Bits(brain))));
    } else if (floatToBFloat16Bits(brain) != pattern || doubleToBFloat16Bits(brain) != pattern) {
      FAIL("bf16 pattern 0x" << std::hex << bits << " did not round-trip");
    }
  }
  // 2 signs * (2^mantissaBits - 1) NaN payloads.
  CHECK(halfNaNs == 2 * 1023);
  CHECK(bf16NaNs == 2 * 127);
}

TEST_CASE("every finite 8-bit pattern round-trips through f8e4m3 and f8e5m2", "[floatconvert]") {
  int e4m3NaNs = 0;
  int e5m2NaNs = 0;
  int e5m2Infs = 0;
  for (uint32_t bits = 0; bits <= 0xff; ++bits) {
    auto pattern = static_cast<uint8_t>(bits);
    INFO("pattern 0x" << std::hex << bits);
    float e4m3 = f8e4m3BitsToFloat(pattern);
    if (std::isnan(e4m3)) {
      ++e4m3NaNs;
      CHECK(std::isnan(f8e4m3BitsToFloat(floatToF8E4M3Bits(e4m3))));
    } else {
      CHECK(floatToF8E4M3Bits(e4m3) == pattern);
      CHECK(doubleToF8E4M3Bits(e4m3) == pattern);
    }
    float e5m2 = f8e5m2BitsToFloat(pattern);
    if (std::isnan(e5m2)) {
      ++e5m2NaNs;
      CHECK(std::isnan(f8e5m2BitsToFloat(floatToF8E5M2Bits(e5m2))));
    } else if (std::isinf(e5m2)) {
      // Only the two inf patterns do not round-trip: satfinite encodes inf as max.
      ++e5m2Infs;
      auto max = static_cast<uint8_t>((pattern & 0x80) | 0x7b);
      CHECK(floatToF8E5M2Bits(e5m2) == max);
      CHECK(doubleToF8E5M2Bits(e5m2) == max);
    } else {
      CHECK(floatToF8E5M2Bits(e5m2) == pattern);
      CHECK(doubleToF8E5M2Bits(e5m2) == pattern);
    }
  }
  CHECK(e4m3NaNs == 2); // only S.1111.111
  CHECK(e5m2NaNs == 2 * 3);
  CHECK(e5m2Infs == 2);
}

TEST_CASE("f16 encoding is monotonic and lands on a neighbour", "[floatconvert]") {
  // Every value between two adjacent f16 values must encode to one of them:
  // check midpoints, and points a hair either side of them, over all positives.
  int wrong = 0;
  for (uint16_t bits = 0; bits < 0x7bff; ++bits) {
    double low = halfBitsToFloat(bits);
    double high = halfBitsToFloat(static_cast<uint16_t>(bits + 1));
    double mid = (low + high) / 2;
    uint16_t even = (bits & 1) ? static_cast<uint16_t>(bits + 1) : bits;
    if (doubleToHalfBits(mid) != even || doubleToHalfBits(std::nextafter(mid, 0.0)) != bits ||
        doubleToHalfBits(std::nextafter(mid, kInf)) != bits + 1) {
      if (wrong++ == 0)
        UNSCOPED_INFO("first wrong gap: after f16 0x" << std::hex << bits);
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("tf32 rounds to nearest with ties away from zero (cvt.rna.tf32.f32)", "[floatconvert]") {
  auto bits = [](float v) { return std::bit_cast<uint32_t>(v); };
  auto fromBits = [](uint32_t b) { return std::bit_cast<float>(b); };
  CHECK(roundFloatToTf32(1.0f) == 1.0f);
  // Below half of the last kept bit (2^-10): down; exactly half: away from
  // zero (nearest even would go down here, 1.0 being even); above: up.
  CHECK(roundFloatToTf32(1.0f + std::ldexp(1.0f, -11) - std::ldexp(1.0f, -23)) == 1.0f);
  CHECK(roundFloatToTf32(1.0f + std::ldexp(1.0f, -11)) == 1.0f + std::ldexp(1.0f, -10));
  CHECK(roundFloatToTf32(-1.0f - std::ldexp(1.0f, -11)) == -1.0f - std::ldexp(1.0f, -10));
  CHECK(bits(roundFloatToTf32(fromBits(0x3f801000))) == 0x3f802000);
  CHECK(bits(roundFloatToTf32(fromBits(0x3f800fff))) == 0x3f800000);
  CHECK(bits(roundFloatToTf32(fromBits(0x3f803000))) == 0x3f804000); // odd tie: up as well
  CHECK(bits(roundFloatToTf32(fromBits(0xbf803000))) == 0xbf804000);
  // A carry into the exponent, and past the largest finite value to infinity.
  CHECK(roundFloatToTf32(fromBits(0x3fffffff)) == 2.0f);
  CHECK(std::isinf(roundFloatToTf32(std::numeric_limits<float>::max())));
  CHECK(roundFloatToTf32(-std::numeric_limits<float>::max()) < 0);
  // Subnormals round the same way; zero, infinities and NaN pass through.
  CHECK(bits(roundFloatToTf32(fromBits(0x00001000))) == 0x00002000);
  CHECK(bits(roundFloatToTf32(-0.0f)) == 0x80000000u);
  CHECK(std::isinf(roundFloatToTf32(static_cast<float>(kInf))));
  CHECK(std::isnan(roundFloatToTf32(static_cast<float>(kNaN))));
  CHECK(std::isnan(roundFloatToTf32(fromBits(0x7f800001)))); // a NaN whose payload rounding would drop
}
