// Tests of HostTensor storage (byte layout per dtype), element access, casts,
// random fills, and the reproducibility of Rng.
#include "support/HostTensor.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

using namespace kiln;

TEST_CASE("Rng follows SplitMix64 and is reproducible", "[hosttensor]") {
  // SplitMix64 from seed 0: the reference sequence's first output.
  Rng zero(0);
  CHECK(zero.nextU64() == 0xe220a8397b1dcdafull);
  CHECK(zero.nextU64() == 0x6e789e6aa1b965f4ull);
  Rng a(1234);
  Rng b(1234);
  Rng c(1235);
  bool anyDifferent = false;
  for (int i = 0; i < 100; ++i) {
    uint64_t va = a.nextU64();
    CHECK(va == b.nextU64());
    anyDifferent |= va != c.nextU64();
  }
  CHECK(anyDifferent);
}

TEST_CASE("Rng uniform and normal have the right range and moments", "[hosttensor]") {
  Rng rng(42);
  const int count = 20001;
  double sum = 0;
  double minimum = 1;
  double maximum = 0;
  for (int i = 0; i < count; ++i) {
    double u = rng.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
    minimum = std::min(minimum, u);
    maximum = std::max(maximum, u);
  }
  CHECK(sum / count == Approx(0.5).margin(0.01));
  CHECK(minimum < 0.001);
  CHECK(maximum > 0.999);
  for (int i = 0; i < 1000; ++i) {
    double u = rng.uniform(-3.0, 5.0);
    REQUIRE(u >= -3.0);
    REQUIRE(u < 5.0);
  }
  double normalSum = 0;
  double normalSquares = 0;
  for (int i = 0; i < count; ++i) {
    double x = rng.normal();
    REQUIRE(std::isfinite(x));
    normalSum += x;
    normalSquares += x * x;
  }
  double mean = normalSum / count;
  CHECK(mean == Approx(0.0).margin(0.03));
  CHECK(normalSquares / count - mean * mean == Approx(1.0).margin(0.04));
}

TEST_CASE("HostTensor stores little-endian row-major bytes", "[hosttensor]") {
  HostTensor f32 =
      HostTensor::fromDoubles(DType::F32, {2, 3}, std::vector<double>{1, 2, 3, 4, 5, -2});
  CHECK(f32.typeStr() == "f32[2,3]");
  CHECK(f32.numElements() == 6);
  CHECK(f32.byteSize() == 24);
  CHECK(f32.rank() == 2);
  // 1.0f is 0x3f800000; -2.0f is 0xc0000000: least significant byte first.
  CHECK(f32.bytes()[0] == 0x00);
  CHECK(f32.bytes()[3] == 0x3f);
  CHECK(f32.bytes()[2] == 0x80);
  CHECK(f32.bytes()[23] == 0xc0);
  CHECK(f32.as<float>()[4] == 5.0f);

  HostTensor f16 = HostTensor::fromDoubles(DType::F16, {3}, std::vector<double>{1.0, -2.0, 65504});
  CHECK(f16.byteSize() == 6);
  CHECK(f16.as<uint16_t>()[0] == 0x3c00);
  CHECK(f16.as<uint16_t>()[1] == 0xc000);
  CHECK(f16.bytes()[4] == 0xff);
  CHECK(f16.bytes()[5] == 0x7b);

  HostTensor i32 = HostTensor::fromDoubles(DType::I32, {2}, std::vector<double>{-1, 258});
  std::vector<uint8_t> expected = {0xff, 0xff, 0xff, 0xff, 0x02, 0x01, 0x00, 0x00};
  CHECK(std::vector<uint8_t>(i32.bytes().begin(), i32.bytes().end()) == expected);
}

TEST_CASE("HostTensor set/get round-trip through every dtype", "[hosttensor]") {
  // Values and what each dtype stores for them (hand-rounded).
  const std::vector<double> values = {0.1, -2.5, 300.7, -129.0, 0.0};
  struct Case {
    DType dtype;
    std::vector<double> stored;
  };
  const std::vector<Case> cases = {
      {DType::F64, {0.1, -2.5, 300.7, -129.0, 0.0}},
      {DType::F32, {static_cast<float>(0.1), -2.5, static_cast<float>(300.7), -129.0, 0.0}},
      {DType::F16, {0x1.998p-4, -2.5, 300.75, -129.0, 0.0}},
      {DType::BF16, {0x1.9ap-4, -2.5, 300.0, -129.0, 0.0}},
      {DType::F8E4M3, {0x1.ap-4, -2.5, 288.0, -128.0, 0.0}},
      {DType::F8E5M2, {0x1.8p-4, -2.5, 320.0, -128.0, 0.0}},
      {DType::I64, {0, -2, 300, -129, 0}},
      {DType::I32, {0, -2, 300, -129, 0}},
      {DType::I8, {0, -2, 44, 127, 0}},
      {DType::Bool, {1, 1, 1, 1, 0}},
  };
  for (const Case &c : cases) {
    INFO("dtype " << dtypeName(c.dtype));
    HostTensor tensor(c.dtype, {5});
    CHECK(tensor.byteSize() == 5u * dtypeByteSize(c.dtype));
    for (int64_t i = 0; i < 5; ++i) {
      CHECK(tensor.getDouble(i) == 0.0); // zero-filled
      tensor.setDouble(i, values[i]);
    }
    CHECK(tensor.toDoubles() == c.stored);
    HostTensor built = HostTensor::fromDoubles(c.dtype, {5}, values);
    CHECK(built.toDoubles() == c.stored);
    for (int64_t i = 0; i < 5; ++i)
      CHECK(roundToDType(values[i], c.dtype) == c.stored[i]);
  }
}

TEST_CASE("HostTensor handles scalars, empty shapes and odd sizes", "[hosttensor]") {
  HostTensor scalar = HostTensor::fromDoubles(DType::F64, {}, std::vector<double>{3.25});
  CHECK(scalar.typeStr() == "f64[]");
  CHECK(scalar.numElements() == 1);
  CHECK(scalar.getDouble(0) == 3.25);
  HostTensor empty(DType::I8, {4, 0, 3});
  CHECK(empty.numElements() == 0);
  CHECK(empty.byteSize() == 0);
  CHECK(empty.typeStr() == "i8[4,0,3]");
  Rng rng(7);
  HostTensor odd = HostTensor::randomUniform(DType::BF16, {3, 5, 7}, rng);
  CHECK(odd.numElements() == 105);
  CHECK(odd.byteSize() == 210);
}

TEST_CASE("HostTensor::create and fromValues report bad shapes and counts", "[hosttensor]") {
  auto messageOf = [](const Expected<HostTensor> &result, ErrorCode code) {
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == code);
    return result.error().message();
  };

  auto made = HostTensor::create(DType::F16, {3, 5});
  REQUIRE(made.has_value());
  CHECK(made->typeStr() == "f16[3,5]");
  CHECK(made->byteSize() == 30);
  CHECK(made->toDoubles() == std::vector<double>(15, 0.0));
  CHECK(HostTensor::checkedByteSize(DType::F64, {7, 3}).value() == 168);
  CHECK(HostTensor::create(DType::I8, {4, 0, 3})->byteSize() == 0);

  CHECK(messageOf(HostTensor::create(DType::F32, {2, -3}), ErrorCode::InvalidArgument) ==
        "cannot make tensor f32[2,-3]: dimension -3 is negative");
  // 2^27 * 2^27 = 2^54 elements; a zero dimension does not excuse the others,
  // because strides still multiply them.
  const int64_t big = int64_t{1} << 27;
  CHECK(messageOf(HostTensor::create(DType::I8, {big, big}), ErrorCode::InvalidArgument) ==
        "cannot make tensor i8[134217728,134217728]: it has more than 2^53 elements");
  CHECK_THAT(messageOf(HostTensor::create(DType::I8, {0, big, big}), ErrorCode::InvalidArgument),
             Catch::Contains("more than 2^53 elements"));
  // Exactly 2^53 elements pass the count check but not the memory check:
  // 64 PiB of f64 is more than any machine holds, and nothing is allocated.
  CHECK_THAT(messageOf(HostTensor::create(DType::F64, {int64_t{1} << 26, big}),
                       ErrorCode::OutOfMemory),
             Catch::StartsWith("cannot allocate tensor f64[67108864,134217728]: it needs 64.0 PiB "
                               "(72057594037927936 bytes), more than the ") &&
                 Catch::EndsWith("of physical memory"));
  CHECK_FALSE(HostTensor::checkedByteSize(DType::F64, {int64_t{1} << 26, big}).has_value());

  std::vector<double> five{1, 2, 3, 4, 5};
  CHECK(messageOf(HostTensor::fromValues(DType::F32, {2, 3}, five), ErrorCode::ShapeMismatch) ==
        "5 values given for a f32[2,3] tensor of 6 elements");
  CHECK(messageOf(HostTensor::fromValues(DType::F32, {}, five), ErrorCode::ShapeMismatch) ==
        "5 values given for a f32[] tensor of 1 element");
  CHECK(messageOf(HostTensor::fromValues(DType::F32, {-5}, five), ErrorCode::InvalidArgument) ==
        "cannot make tensor f32[-5]: dimension -5 is negative");
  auto rounded = HostTensor::fromValues(DType::BF16, {5}, std::vector<double>{1, 2, 3, 4, 257});
  REQUIRE(rounded.has_value());
  CHECK(rounded->toDoubles() == std::vector<double>{1, 2, 3, 4, 256}); // bf16 has 8 bits
}

TEST_CASE("HostTensor castTo rounds and keeps int64 exact", "[hosttensor]") {
  HostTensor f64 = HostTensor::fromDoubles(DType::F64, {4}, std::vector<double>{1.5, -7.9, 1e6, 0});
  CHECK(f64.castTo(DType::I8).toDoubles() == std::vector<double>{1, -7, 127, 0}); // 1e6 saturates
  CHECK(f64.castTo(DType::F8E4M3).toDoubles() == std::vector<double>{1.5, -8, 448, 0});
  CHECK(f64.castTo(DType::Bool).toDoubles() == std::vector<double>{1, 1, 1, 0});
  CHECK(f64.castTo(DType::F64).bytes().size() == 32);

  // 2^62 + 1 is not a double: an int64 -> int32 cast must not pass through fp64.
  HostTensor i64(DType::I64, {2});
  i64.as<int64_t>()[0] = (int64_t{1} << 62) + 1;
  i64.as<int64_t>()[1] = -(int64_t{1} << 40) - 3;
  HostTensor i32 = i64.castTo(DType::I32);
  CHECK(i32.as<int32_t>()[0] == 1);
  CHECK(i32.as<int32_t>()[1] == -3);
  HostTensor same = i64.castTo(DType::I64);
  CHECK(same.as<int64_t>()[0] == (int64_t{1} << 62) + 1);
  HostTensor i8 = i64.castTo(DType::I8);
  CHECK(i8.as<int8_t>()[1] == -3);
}

TEST_CASE("random fills are seeded, in range and rounded to the dtype", "[hosttensor]") {
  Rng first(99);
  Rng second(99);
  HostTensor a = HostTensor::randomUniform(DType::F16, {17, 3}, first, -2.0, 3.0);
  HostTensor b = HostTensor::randomUniform(DType::F16, {17, 3}, second, -2.0, 3.0);
  CHECK(std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0);
  for (double v : a.toDoubles()) {
    CHECK(v >= -2.0);
    CHECK(v <= 3.0); // rounding to f16 may reach the upper bound
    CHECK(roundToDType(v, DType::F16) == v);
  }
  HostTensor n = HostTensor::randomNormal(DType::F32, {4001}, first, 10.0, 0.5);
  double sum = 0;
  for (double v : n.toDoubles())
    sum += v;
  CHECK(sum / 4001 == Approx(10.0).margin(0.05));
  HostTensor ints = HostTensor::randomUniform(DType::I32, {50}, first, -5.0, 5.0);
  bool sawNegative = false;
  for (double v : ints.toDoubles()) {
    CHECK(v == std::trunc(v));
    CHECK(v >= -4.0); // truncation toward zero: (-5, -4] becomes -4
    CHECK(v <= 4.0);
    sawNegative |= v < 0;
  }
  CHECK(sawNegative);
}

TEST_CASE("HostTensor: uninitialized storage is sized and aligned, copies are deep",
          "[hosttensor]") {
  HostTensor t = HostTensor::uninitialized(DType::F16, {3, 5, 7});
  CHECK(t.dtype() == DType::F16);
  CHECK(t.shape() == std::vector<int64_t>{3, 5, 7});
  CHECK(t.byteSize() == 3 * 5 * 7 * 2);
  CHECK(reinterpret_cast<uintptr_t>(t.bytes().data()) % kBufferAlignment == 0);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.setDouble(i, double(i % 13));
  HostTensor copy = t;
  CHECK(copy.bytes().data() != t.bytes().data());
  t.setDouble(4, -1.0);
  CHECK(copy.getDouble(4) == 4.0);
  CHECK(copy.toDoubles().size() == size_t(t.numElements()));
  copy = t;
  CHECK(copy.getDouble(4) == -1.0);
  CHECK(HostTensor::uninitialized(DType::F32, {0, 4}).byteSize() == 0);
  CHECK(HostTensor::uninitialized(DType::F32, {}).byteSize() == 4);
}

#ifdef __linux__
namespace {

/// The VmFlags of the mapping of this process that holds `address` ("" when none is found).
std::string mappingFlags(uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 &&
        line.find('-') < line.find(' ')) {
      inside = begin <= address && address < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0)
      return line + " ";
  }
  return "";
}

} // namespace

TEST_CASE("HostTensor: a large new tensor asks for huge pages", "[hosttensor]") {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    // Skipped, saying why (a case with no assertion fails under --warn NoAssertions).
    WARN("no transparent huge pages on this kernel: the huge-page advice is not checked");
    SUCCEED("skipped: no /sys/kernel/mm/transparent_hugepage");
    return;
  }
  // 16 MiB: well over the 8 MiB from which the page faults of a fresh mapping dominate.
  HostTensor large(DType::F32, {4, 1024, 1024});
  uintptr_t middle = reinterpret_cast<uintptr_t>(large.bytes().data()) + large.byteSize() / 2;
  std::string flags = mappingFlags(middle);
  REQUIRE_FALSE(flags.empty());
  CHECK(flags.find(" hg ") != std::string::npos);
  // The advice comes before the zero fill, which it must not replace.
  CHECK(large.getDouble(large.numElements() / 2) == 0.0);
  // A run's outputs are allocated without the zero fill, and ask the same.
  HostTensor output = HostTensor::uninitialized(DType::F32, {4, 1024, 1024});
  CHECK(mappingFlags(reinterpret_cast<uintptr_t>(output.bytes().data()) + output.byteSize() / 2)
            .find(" hg ") != std::string::npos);
}
#endif
