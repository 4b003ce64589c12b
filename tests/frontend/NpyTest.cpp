// .npy files: round trips of every dtype, NumPy's own header forms (Fortran order, big
// endian, version 2), and the errors of malformed files.
#include "frontend/io/Npy.h"
#include "tests/frontend/TempDir.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <sys/resource.h>

namespace kiln {
namespace {

// A .npy file as NumPy writes it: magic, version 1.0, header, data.
std::string npyBytes(const std::string &header, std::string_view data, char major = 1) {
  std::string bytes = "\x93NUMPY";
  bytes += major;
  bytes += '\0';
  std::string padded = header + "\n";
  if (major == 1) {
    bytes += static_cast<char>(padded.size() & 0xff);
    bytes += static_cast<char>(padded.size() >> 8);
  } else {
    for (int i = 0; i < 4; ++i)
      bytes += static_cast<char>((padded.size() >> (8 * i)) & 0xff);
  }
  return bytes + padded + std::string(data);
}

TEST_CASE("every dtype round-trips through a .npy file, bit for bit") {
  testing::TempDir dir;
  Rng rng(5);
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32,
                      DType::I8, DType::Bool}) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {7}, {3, 5}, {2, 0, 3}}) {
      CAPTURE(dtypeName(dtype), shape.size());
      HostTensor tensor = HostTensor::randomUniform(dtype, shape, rng, -100, 100);
      std::string path = dir.file("t.npy");
      REQUIRE(io::saveNpy(path, tensor));
      auto loaded = io::loadNpy(path);
      REQUIRE(loaded);
      CHECK(loaded->dtype() == dtype);
      CHECK(loaded->shape() == shape);
      CHECK(std::equal(loaded->bytes().begin(), loaded->bytes().end(), tensor.bytes().begin(),
                       tensor.bytes().end()));
    }
  }
  CHECK_FALSE(io::serializeNpy(HostTensor(DType::F8E4M3, {2})));
  CHECK(dir.entries() == std::set<std::string>{"t.npy"}); // no temporary left behind
}

TEST_CASE("the writer's header is NumPy's: 64-byte aligned data, a Python dict") {
  auto bytes = io::serializeNpy(HostTensor(DType::F32, {2, 3}));
  REQUIRE(bytes);
  CHECK(bytes->size() % 64 == 24);
  CHECK_THAT(*bytes, Catch::Contains("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
  auto vector = io::serializeNpy(HostTensor(DType::I64, {4}));
  REQUIRE(vector);
  CHECK_THAT(*vector, Catch::Contains("'shape': (4,)"));
  auto scalar = io::serializeNpy(HostTensor(DType::Bool, {}));
  REQUIRE(scalar);
  CHECK_THAT(*scalar, Catch::Contains("'descr': '|b1'") && Catch::Contains("'shape': ()"));
}

TEST_CASE("Fortran-order, big-endian and version-2 files read as NumPy means them") {
  // [[1, 2, 3], [4, 5, 6]] stored column-major: 1 4 2 5 3 6.
  std::vector<int32_t> columnMajor = {1, 4, 2, 5, 3, 6};
  std::string data(reinterpret_cast<const char *>(columnMajor.data()), 24);
  auto fortran = io::parseNpy(
      npyBytes("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", data));
  REQUIRE(fortran);
  CHECK(fortran->toDoubles() == std::vector<double>{1, 2, 3, 4, 5, 6});

  // A rank-3 Fortran array against the index formula a[i,j,k] = 100i + 10j + k.
  std::vector<int64_t> values;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i)
        values.push_back(100 * i + 10 * j + k);
  auto rank3 = io::parseNpy(npyBytes("{'fortran_order': True, 'shape': (2, 3, 4), 'descr': '<i8'}",
                                     std::string_view(reinterpret_cast<const char *>(values.data()),
                                                      values.size() * 8)));
  REQUIRE(rank3);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        CHECK(rank3->getDouble(i * 12 + j * 4 + k) == 100 * i + 10 * j + k);

  float value = 1.5f;
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  std::string big = {static_cast<char>(bits >> 24), static_cast<char>(bits >> 16),
                     static_cast<char>(bits >> 8), static_cast<char>(bits)};
  auto bigEndian =
      io::parseNpy(npyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", big, 2));
  REQUIRE(bigEndian);
  CHECK(bigEndian->getDouble(0) == 1.5);
}

TEST_CASE("malformed .npy files are FormatErrors naming the problem") {
  std::string floats(8, '\0');
  struct Case {
    std::string bytes;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"", "no \\x93NUMPY magic"},
      {"PK\x03\x04 a zip file", "no \\x93NUMPY magic"},
      {npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", floats, 9),
       "format version 9"},
      {npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", floats),
       "needs 12 data bytes, the file has 8"},
      {npyBytes("{'descr': '<u1', 'fortran_order': False, 'shape': (8,), }", floats),
       "dtype '<u1' is not one kiln reads"},
      {npyBytes("{'descr': '<f4', 'fortran_order': False}", floats), "lacks one of"},
      {npyBytes("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", floats),
       "True or False"},
      {npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,-1)}", floats),
       "a dimension"},
      {npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
                floats),
       "a dimension"},
      {npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", floats),
       "one each of"},
      {std::string("\x93NUMPY\x01\x00\xff\x00{", 11), "the header claims 255 bytes"},
  };
  for (const Case &c : cases) {
    CAPTURE(c.expected);
    auto parsed = io::parseNpy(c.bytes, "case.npy");
    REQUIRE_FALSE(parsed);
    CHECK_THAT(parsed.error().message(), Catch::Contains(c.expected) && Catch::Contains("case.npy"));
  }
  testing::TempDir dir;
  CHECK_THAT(io::loadNpy(dir.path().string()).error().message(),
             Catch::Contains("not a regular file"));
}

// Found by npy_fuzzer (tests/fuzz/npy-corpus/lying-shape.npy): the reader allocated the
// tensor the header described before comparing its size with the data present.
TEST_CASE("a .npy header claiming more data than the file holds allocates nothing") {
  std::string eightBytes(8, '\0');
  // 3.2 GB: within the machine's memory, so only the order of the checks refuses it early.
  auto large = io::parseNpy(
      npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (400000000,), }", eightBytes),
      "large.npy");
  REQUIRE_FALSE(large);
  CHECK(large.error().code() == ErrorCode::FormatError);
  CHECK_THAT(large.error().message(),
             Catch::Contains("f64[400000000] needs 3200000000 data bytes, the file has 8"));
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  CHECK(usage.ru_maxrss < 2'000'000); // KiB: the 3.2 GB were never touched
  // 8 TiB: more than any machine's memory, still reported as the file's inconsistency.
  auto huge = io::parseNpy(
      npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }",
               eightBytes),
      "huge.npy");
  REQUIRE_FALSE(huge);
  CHECK_THAT(huge.error().message(),
             Catch::Contains("needs 8796093022208 data bytes, the file has 8"));
}

} // namespace
} // namespace kiln
