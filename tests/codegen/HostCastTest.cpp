// Host JIT tests of Cast against support/FloatConvert.h and hand-computed
// integer semantics: every f16/bf16 pattern and every f8 pattern both ways,
// rounding ties, f64 rounding once, saturating float -> int, wrapping int -> int,
// bool, in scalar loops (vectorized by LLVM) and explicit 8-lane vectors.
#include "HostTestUtil.h"

#include "support/FloatConvert.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <random>

using namespace kiln;
using namespace kiln::kir;
using kiln::testing::AlignedVector;
using kiln::testing::JitKernel;
using kiln::testing::sameFloat;

namespace {

const float kInfF = std::numeric_limits<float>::infinity();
const float kNaNF = std::numeric_limits<float>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

/// out[i] = cast(in[i]) over n elements, `lanes` at a time (lanes == 1: a
/// Vectorized scalar loop; otherwise explicit vectors).
template <typename Out, typename In>
AlignedVector<Out> convert(DType from, DType to, const AlignedVector<In> &input, int lanes) {
  int64_t n = static_cast<int64_t>(input.size());
  REQUIRE(n % lanes == 0);
  auto in = makeBuffer("in", from, n);
  auto out = makeBuffer("out", to, n);
  auto i = makeVar("i");
  ExprPtr at = mul(kir::ref(i), index(lanes));
  StmtPtr body = store(out, at, cast(load(in, at, lanes), Type{to, lanes}));
  std::string name = fmt::format("cast_{}_{}_x{}", dtypeName(from), dtypeName(to), lanes);
  JitKernel kernel(
      Kernel{name,
             {in, out},
             forRange(i, n / lanes, lanes == 1 ? ForKind::Vectorized : ForKind::Serial, body)});
  AlignedVector<Out> output(input.size());
  kernel({const_cast<In *>(input.data()), output.data()});
  return output;
}

/// Pads `values` with copies of its first element to a multiple of 8.
template <typename T> AlignedVector<T> padTo8(AlignedVector<T> values) {
  while (values.size() % 8 != 0)
    values.push_back(values.front());
  return values;
}

AlignedVector<uint16_t> all16BitPatterns() {
  AlignedVector<uint16_t> bits(65536);
  for (uint32_t b = 0; b < 65536; ++b)
    bits[b] = static_cast<uint16_t>(b);
  return bits;
}

AlignedVector<uint8_t> all8BitPatterns() {
  AlignedVector<uint8_t> bits(256);
  for (uint32_t b = 0; b < 256; ++b)
    bits[b] = static_cast<uint8_t>(b);
  return bits;
}

/// Inputs that probe an f32 -> narrow encoder: every value of the format, the
/// midpoint (a rounding tie) between neighbours and one f32 ulp either side,
/// random f32 patterns, and specials.
AlignedVector<float> encoderInputs(float (*decode)(uint32_t), uint32_t patterns) {
  AlignedVector<float> values;
  for (uint32_t b = 0; b < patterns; ++b) {
    float value = decode(b);
    values.push_back(value);
    float next = decode(b + 1 < patterns ? b + 1 : b);
    if (std::isfinite(value) && std::isfinite(next) && std::signbit(value) == std::signbit(next)) {
      float mid = static_cast<float>((static_cast<double>(value) + next) / 2);
      values.push_back(mid);
      values.push_back(std::nextafter(mid, kInfF));
      values.push_back(std::nextafter(mid, -kInfF));
    }
  }
  std::mt19937 rng(1234);
  for (int k = 0; k < 1 << 16; ++k)
    values.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  for (float special : {0.0f, -0.0f, kInfF, -kInfF, kNaNF, -kNaNF, 1e30f, -1e30f, 1e-30f, 65520.0f,
                        448.0f, 464.0f, 57344.0f, 61440.0f, 3.4028235e38f})
    values.push_back(special);
  return padTo8(std::move(values));
}

float decodeHalf(uint32_t b) { return halfBitsToFloat(static_cast<uint16_t>(b)); }
float decodeBFloat16(uint32_t b) { return bfloat16BitsToFloat(static_cast<uint16_t>(b)); }
float decodeE4M3(uint32_t b) { return f8e4m3BitsToFloat(static_cast<uint8_t>(b)); }
float decodeE5M2(uint32_t b) { return f8e5m2BitsToFloat(static_cast<uint8_t>(b)); }

bool isHalfNaN(uint16_t bits) { return (bits & 0x7c00) == 0x7c00 && (bits & 0x03ff) != 0; }

/// Graph semantics of float -> integer: truncate, saturate, NaN -> 0.
template <typename T> T saturatingTruncate(double value) {
  if (std::isnan(value))
    return 0;
  double truncated = std::trunc(value);
  if (truncated <= static_cast<double>(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  // 2^63 (the double nearest INT64_MAX) and above saturate.
  if (truncated >= std::ldexp(1.0, std::numeric_limits<T>::digits))
    return std::numeric_limits<T>::max();
  return static_cast<T>(truncated);
}

} // namespace

TEST_CASE("f16 -> f32 is exact for all 2^16 patterns", "[codegen][host][cast]") {
  auto bits = all16BitPatterns();
  for (int lanes : {1, 8}) {
    auto result = convert<float>(DType::F16, DType::F32, bits, lanes);
    for (uint32_t b = 0; b < 65536; ++b)
      REQUIRE(sameFloat(result[b], halfBitsToFloat(static_cast<uint16_t>(b))));
  }
}

TEST_CASE("f32 -> f16 rounds to nearest even like FloatConvert", "[codegen][host][cast]") {
  auto inputs = encoderInputs(decodeHalf, 0x7c00); // finite non-negative patterns ...
  auto negatives = encoderInputs([](uint32_t b) { return -decodeHalf(b); }, 0x7c00);
  inputs.insert(inputs.end(), negatives.begin(), negatives.end());
  for (int lanes : {1, 8}) {
    auto result = convert<uint16_t>(DType::F32, DType::F16, inputs, lanes);
    for (size_t k = 0; k < inputs.size(); ++k) {
      uint16_t expected = floatToHalfBits(inputs[k]);
      if (isHalfNaN(expected)) {
        REQUIRE(isHalfNaN(result[k]));
        REQUIRE((result[k] & 0x8000) == (expected & 0x8000));
      } else if (result[k] != expected) {
        FAIL("f32 " << inputs[k] << " gave f16 bits " << result[k] << ", expected " << expected);
      }
    }
  }
}

TEST_CASE("bf16 -> f32 is exact for all 2^16 patterns", "[codegen][host][cast]") {
  auto bits = all16BitPatterns();
  for (int lanes : {1, 8}) {
    auto result = convert<float>(DType::BF16, DType::F32, bits, lanes);
    for (uint32_t b = 0; b < 65536; ++b)
      REQUIRE(kiln::testing::bitsOf(result[b]) ==
              kiln::testing::bitsOf(bfloat16BitsToFloat(static_cast<uint16_t>(b))));
  }
}

TEST_CASE("f32 -> bf16 rounds to nearest even bit-exactly", "[codegen][host][cast]") {
  auto inputs = encoderInputs(decodeBFloat16, 65536);
  for (uint32_t payload : {0x7f800001u, 0xffc12345u, 0x7fbfffffu}) // NaNs with payloads
    inputs.push_back(std::bit_cast<float>(payload));
  inputs = padTo8(std::move(inputs));
  for (int lanes : {1, 8}) {
    auto result = convert<uint16_t>(DType::F32, DType::BF16, inputs, lanes);
    for (size_t k = 0; k < inputs.size(); ++k)
      if (result[k] != floatToBFloat16Bits(inputs[k]))
        FAIL("f32 bits " << std::hex << kiln::testing::bitsOf(inputs[k]) << " gave bf16 "
                         << result[k] << ", expected " << floatToBFloat16Bits(inputs[k]));
  }
  // Hand-checked: 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1.
  AlignedVector<float> ties{1.0f + std::ldexp(1.0f, -8),
                            1.0f + 3 * std::ldexp(1.0f, -8),
                            3.4028235e38f,
                            -0.0f,
                            0.0f,
                            1.0f,
                            -2.0f,
                            kInfF};
  auto tieBits = convert<uint16_t>(DType::F32, DType::BF16, ties, 8);
  CHECK(tieBits[0] == 0x3f80);
  CHECK(tieBits[1] == 0x3f82); // 1 + 3*2^-8 ties up to the even 1 + 2^-6
  CHECK(tieBits[2] == 0x7f80); // above the largest bf16's rounding boundary: inf
  CHECK(tieBits[3] == 0x8000);
  CHECK(tieBits[4] == 0x0000);
  CHECK(tieBits[5] == 0x3f80);
  CHECK(tieBits[6] == 0xc000);
  CHECK(tieBits[7] == 0x7f80);
}

TEST_CASE("f8 -> f32 is exact for all 256 patterns of both formats", "[codegen][host][cast]") {
  auto bits = all8BitPatterns();
  for (int lanes : {1, 8}) {
    auto e4m3 = convert<float>(DType::F8E4M3, DType::F32, bits, lanes);
    auto e5m2 = convert<float>(DType::F8E5M2, DType::F32, bits, lanes);
    for (uint32_t b = 0; b < 256; ++b) {
      REQUIRE(sameFloat(e4m3[b], f8e4m3BitsToFloat(static_cast<uint8_t>(b))));
      REQUIRE(sameFloat(e5m2[b], f8e5m2BitsToFloat(static_cast<uint8_t>(b))));
    }
  }
  CHECK(convert<float>(DType::F8E4M3, DType::F32, AlignedVector<uint8_t>{0x7e}, 1)[0] == 448.0f);
}

TEST_CASE("f32 -> f8 saturates and rounds like FloatConvert", "[codegen][host][cast]") {
  auto e4m3Inputs = encoderInputs(decodeE4M3, 256);
  auto e5m2Inputs = encoderInputs(decodeE5M2, 256);
  for (int lanes : {1, 8}) {
    auto e4m3 = convert<uint8_t>(DType::F32, DType::F8E4M3, e4m3Inputs, lanes);
    for (size_t k = 0; k < e4m3Inputs.size(); ++k)
      REQUIRE(e4m3[k] == floatToF8E4M3Bits(e4m3Inputs[k]));
    auto e5m2 = convert<uint8_t>(DType::F32, DType::F8E5M2, e5m2Inputs, lanes);
    for (size_t k = 0; k < e5m2Inputs.size(); ++k)
      REQUIRE(e5m2[k] == floatToF8E5M2Bits(e5m2Inputs[k]));
  }
  AlignedVector<float> big{1e6f, -kInfF, 448.0f, 0.0f};
  auto saturated = convert<uint8_t>(DType::F32, DType::F8E4M3, big, 1);
  CHECK(saturated == AlignedVector<uint8_t>{0x7e, 0xfe, 0x7e, 0x00});
}

TEST_CASE("f64 -> narrow floats round once, not through f32", "[codegen][host][cast]") {
  // 1 + 2^-11 + 2^-40 lies just above the f16 tie between 1 and 1 + 2^-10;
  // rounding it to f32 first would land on the tie and round down to 1.
  double aboveHalfTie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  double aboveBf16Tie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  double aboveE4M3Tie = 1.0 + std::ldexp(1.0, -4) + std::ldexp(1.0, -40);
  AlignedVector<double> inputs{aboveHalfTie, aboveBf16Tie, aboveE4M3Tie, 1e300,    -1e300, kInf,
                               kNaN,         -0.0,         1e-310,       65519.99, 3.0e38, 123.456};
  std::mt19937_64 rng(99);
  for (int k = 0; k < 4096; ++k)
    inputs.push_back(std::ldexp(static_cast<double>(rng() >> 11), -53) *
                     std::ldexp(1.0, static_cast<int>(rng() % 80) - 40) * (k % 2 ? 1 : -1));
  inputs = padTo8(std::move(inputs));
  for (int lanes : {1, 8}) {
    auto f16 = convert<uint16_t>(DType::F64, DType::F16, inputs, lanes);
    auto bf16 = convert<uint16_t>(DType::F64, DType::BF16, inputs, lanes);
    auto e4m3 = convert<uint8_t>(DType::F64, DType::F8E4M3, inputs, lanes);
    auto e5m2 = convert<uint8_t>(DType::F64, DType::F8E5M2, inputs, lanes);
    for (size_t k = 0; k < inputs.size(); ++k) {
      INFO("input " << inputs[k]);
      REQUIRE(f16[k] == doubleToHalfBits(inputs[k]));
      REQUIRE(bf16[k] == doubleToBFloat16Bits(inputs[k]));
      REQUIRE(e4m3[k] == doubleToF8E4M3Bits(inputs[k]));
      REQUIRE(e5m2[k] == doubleToF8E5M2Bits(inputs[k]));
    }
    CHECK(f16[0] == 0x3c01);
    CHECK(bf16[1] == 0x3f81);
    CHECK(e4m3[2] == 0x39);
  }
}

TEST_CASE("narrow -> f64 and narrow -> narrow convert through exact f32", "[codegen][host][cast]") {
  auto bits = all16BitPatterns();
  auto toF64 = convert<double>(DType::F16, DType::F64, bits, 8);
  auto toBf16 = convert<uint16_t>(DType::F16, DType::BF16, bits, 1);
  auto bfToF64 = convert<double>(DType::BF16, DType::F64, bits, 1);
  for (uint32_t b = 0; b < 65536; ++b) {
    float half = halfBitsToFloat(static_cast<uint16_t>(b));
    REQUIRE(sameFloat(toF64[b], half));
    REQUIRE(toBf16[b] == floatToBFloat16Bits(half));
    REQUIRE(sameFloat(bfToF64[b], bfloat16BitsToFloat(static_cast<uint16_t>(b))));
  }
  auto e5m2ToE4m3 = convert<uint8_t>(DType::F8E5M2, DType::F8E4M3, all8BitPatterns(), 8);
  for (uint32_t b = 0; b < 256; ++b)
    REQUIRE(e5m2ToE4m3[b] == floatToF8E4M3Bits(f8e5m2BitsToFloat(static_cast<uint8_t>(b))));
}

TEST_CASE("float -> int truncates, saturates and maps NaN to 0", "[codegen][host][cast]") {
  AlignedVector<float> f32{kNaNF,         -kNaNF,        kInfF,          -kInfF,  1e10f,
                           -1e10f,        127.9f,        128.0f,         -128.9f, -129.0f,
                           2.5f,          -2.5f,         0.999f,         -0.999f, -0.0f,
                           2147483520.0f, 2147483648.0f, -2147483648.0f, 3e9f,    -3e9f,
                           9.2233715e18f, 9.223372e18f,  1e19f,          -1e19f};
  f32 = padTo8(std::move(f32));
  for (int lanes : {1, 8}) {
    auto i8 = convert<int8_t>(DType::F32, DType::I8, f32, lanes);
    auto i32 = convert<int32_t>(DType::F32, DType::I32, f32, lanes);
    auto i64 = convert<int64_t>(DType::F32, DType::I64, f32, lanes);
    for (size_t k = 0; k < f32.size(); ++k) {
      INFO("input " << f32[k]);
      REQUIRE(i8[k] == saturatingTruncate<int8_t>(f32[k]));
      REQUIRE(i32[k] == saturatingTruncate<int32_t>(f32[k]));
      REQUIRE(i64[k] == saturatingTruncate<int64_t>(f32[k]));
    }
    // Hand-checked anchors.
    CHECK(i8[0] == 0);
    CHECK(i8[2] == 127);
    CHECK(i8[3] == -128);
    CHECK(i8[6] == 127);
    CHECK(i8[8] == -128);
    CHECK(i32[10] == 2);
    CHECK(i32[11] == -2);
    CHECK(i32[16] == std::numeric_limits<int32_t>::max());
    CHECK(i64[22] == std::numeric_limits<int64_t>::max());
    CHECK(i64[23] == std::numeric_limits<int64_t>::min());
  }
  AlignedVector<double> f64{kNaN,         4294967296.5, -2147483648.9, -2147483649.0,
                            2147483647.9, -7.75,        9.3e18,        -9.3e18};
  auto i32 = convert<int32_t>(DType::F64, DType::I32, f64, 8);
  CHECK(i32 == AlignedVector<int32_t>{0, INT32_MAX, INT32_MIN, INT32_MIN, INT32_MAX, -7, INT32_MAX,
                                      INT32_MIN});
  auto i64 = convert<int64_t>(DType::F64, DType::I64, f64, 1);
  CHECK(i64 == AlignedVector<int64_t>{0, 4294967296, -2147483648, -2147483649, 2147483647, -7,
                                      INT64_MAX, INT64_MIN});
  // Narrow floats convert through f32: f16 inf saturates, NaN gives 0.
  AlignedVector<uint16_t> half{0x7c00, 0xfc00, 0x7e00, 0x7bff, 0xc100, 0x3c00, 0x0001, 0xbc00};
  auto fromHalf = convert<int32_t>(DType::F16, DType::I32, half, 8);
  CHECK(fromHalf == AlignedVector<int32_t>{INT32_MAX, INT32_MIN, 0, 65504, -2, 1, 0, -1});
  auto e4m3ToI8 =
      convert<int8_t>(DType::F8E4M3, DType::I8, AlignedVector<uint8_t>{0x7e, 0xfe, 0x7f, 0x38}, 1);
  CHECK(e4m3ToI8 == AlignedVector<int8_t>{127, -128, 0, 1});
}

TEST_CASE("int -> int wraps and sign-extends", "[codegen][host][cast]") {
  AlignedVector<int64_t> i64{
      0,         1,         -1,         255,         256, 128,  -129, 0x1'0000'0005,
      INT64_MIN, INT64_MAX, 2147483648, -2147483649, 300, -300, 127,  -128};
  for (int lanes : {1, 8}) {
    auto toI32 = convert<int32_t>(DType::I64, DType::I32, i64, lanes);
    auto toI8 = convert<int8_t>(DType::I64, DType::I8, i64, lanes);
    for (size_t k = 0; k < i64.size(); ++k) {
      REQUIRE(toI32[k] == static_cast<int32_t>(static_cast<uint32_t>(i64[k])));
      REQUIRE(toI8[k] == static_cast<int8_t>(static_cast<uint8_t>(i64[k])));
    }
    CHECK(toI8[3] == -1);
    CHECK(toI8[5] == -128);
    CHECK(toI32[7] == 5);
    CHECK(toI32[10] == INT32_MIN);
  }
  AlignedVector<int8_t> i8{-128, -1, 0, 127, 5, -5, 100, -100};
  CHECK(convert<int64_t>(DType::I8, DType::I64, i8, 8) ==
        AlignedVector<int64_t>{-128, -1, 0, 127, 5, -5, 100, -100});
  CHECK(convert<int32_t>(DType::I8, DType::I32, i8, 1) ==
        AlignedVector<int32_t>{-128, -1, 0, 127, 5, -5, 100, -100});
}

TEST_CASE("int -> float rounds like the reference", "[codegen][host][cast]") {
  AlignedVector<int32_t> i32{2049, 2051, -2049, 65519, 65520, 16777217, -7, 0};
  auto toF32 = convert<float>(DType::I32, DType::F32, i32, 8);
  CHECK(toF32 == AlignedVector<float>{2049.0f, 2051.0f, -2049.0f, 65519.0f, 65520.0f, 16777216.0f,
                                      -7.0f, 0.0f});
  auto toF16 = convert<uint16_t>(DType::I32, DType::F16, i32, 1);
  for (size_t k = 0; k < i32.size(); ++k)
    REQUIRE(toF16[k] == doubleToHalfBits(i32[k]));
  CHECK(toF16[0] == 0x6800); // 2049 ties to even 2048
  CHECK(toF16[1] == 0x6802); // 2051 ties to even 2052
  CHECK(toF16[4] == 0x7c00); // 65520 rounds to inf
  AlignedVector<int64_t> i64{(int64_t{1} << 53) + 1, INT64_MAX, INT64_MIN, -3};
  auto toF64 = convert<double>(DType::I64, DType::F64, i64, 1);
  CHECK(toF64 == AlignedVector<double>{9007199254740992.0, 9223372036854775808.0,
                                       -9223372036854775808.0, -3.0});
  auto i64ToBf16 = convert<uint16_t>(DType::I64, DType::BF16, i64, 1);
  for (size_t k = 0; k < i64.size(); ++k)
    REQUIRE(i64ToBf16[k] == doubleToBFloat16Bits(static_cast<double>(i64[k])));
}

TEST_CASE("casts to and from bool", "[codegen][host][cast]") {
  AlignedVector<float> f32{0.0f, -0.0f, kNaNF, 1e-45f, -3.0f, kInfF, 0.5f, 0.0f};
  CHECK(convert<uint8_t>(DType::F32, DType::Bool, f32, 8) ==
        AlignedVector<uint8_t>{0, 0, 1, 1, 1, 1, 1, 0});
  AlignedVector<int32_t> i32{0, 256, -1, 1};
  CHECK(convert<uint8_t>(DType::I32, DType::Bool, i32, 1) == AlignedVector<uint8_t>{0, 1, 1, 1});
  AlignedVector<uint16_t> half{0x8000, 0x0001, 0x7e00, 0x0000};
  CHECK(convert<uint8_t>(DType::F16, DType::Bool, half, 1) == AlignedVector<uint8_t>{0, 1, 1, 0});
  AlignedVector<uint8_t> flags{0, 1, 1, 0, 0, 0, 1, 1};
  CHECK(convert<float>(DType::Bool, DType::F32, flags, 8) ==
        AlignedVector<float>{0, 1, 1, 0, 0, 0, 1, 1});
  CHECK(convert<int64_t>(DType::Bool, DType::I64, flags, 1) ==
        AlignedVector<int64_t>{0, 1, 1, 0, 0, 0, 1, 1});
  CHECK(convert<uint16_t>(DType::Bool, DType::F16, flags, 8) ==
        AlignedVector<uint16_t>{0, 0x3c00, 0x3c00, 0, 0, 0, 0x3c00, 0x3c00});
  CHECK(convert<uint16_t>(DType::Bool, DType::BF16, flags, 1) ==
        AlignedVector<uint16_t>{0, 0x3f80, 0x3f80, 0, 0, 0, 0x3f80, 0x3f80});
}

TEST_CASE("f32 <-> f64 round to nearest even", "[codegen][host][cast]") {
  AlignedVector<double> f64{1.0 + std::ldexp(1.0, -24),
                            1.0 + 3 * std::ldexp(1.0, -24),
                            1e300,
                            -1e300,
                            1e-300,
                            kNaN,
                            0.1,
                            -0.0};
  auto f32 = convert<float>(DType::F64, DType::F32, f64, 8);
  for (size_t k = 0; k < f64.size(); ++k)
    REQUIRE(sameFloat(f32[k], static_cast<float>(f64[k])));
  CHECK(f32[0] == 1.0f);
  CHECK(f32[1] == 1.0f + std::ldexp(1.0f, -22));
  CHECK(f32[2] == kInfF);
  auto back = convert<double>(DType::F32, DType::F64, f32, 1);
  for (size_t k = 0; k < f32.size(); ++k)
    REQUIRE(sameFloat(back[k], f32[k]));
}
