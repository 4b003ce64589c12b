// Tests of the IDX reader on hand-made files (raw and gzipped), its errors,
// and, when the Debian package is installed, the real Fashion-MNIST test set.
#include "frontend/io/Idx.h"

#include "frontend/TempDir.h"

#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <filesystem>
#include <sys/resource.h>

using namespace kiln;
using namespace kiln::io;
using kiln::testing::TempDir;
using kiln::testing::writeBytes;

namespace {

std::vector<uint8_t> idxFile(uint8_t typeCode, const std::vector<uint32_t> &dims,
                             const std::vector<uint8_t> &data) {
  std::vector<uint8_t> bytes = {0, 0, typeCode, static_cast<uint8_t>(dims.size())};
  for (uint32_t dim : dims)
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<uint8_t>(dim >> shift));
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

uint32_t crc32Of(const std::vector<uint8_t> &data) {
  uint32_t crc = 0xffffffffu;
  for (uint8_t byte : data) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
  }
  return ~crc;
}

/// A gzip file (RFC 1952) holding `data` in stored deflate blocks (RFC 1951):
/// written by hand so the test does not use the library it checks.
std::vector<uint8_t> gzipStored(const std::vector<uint8_t> &data) {
  std::vector<uint8_t> out = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  size_t pos = 0;
  do {
    size_t length = std::min<size_t>(data.size() - pos, 65535);
    bool final = pos + length == data.size();
    out.push_back(final ? 1 : 0); // BFINAL, BTYPE=00 (stored), then byte-aligned
    out.push_back(static_cast<uint8_t>(length));
    out.push_back(static_cast<uint8_t>(length >> 8));
    out.push_back(static_cast<uint8_t>(~length));
    out.push_back(static_cast<uint8_t>(~length >> 8));
    out.insert(out.end(), data.begin() + static_cast<ptrdiff_t>(pos),
               data.begin() + static_cast<ptrdiff_t>(pos + length));
    pos += length;
  } while (pos < data.size());
  uint32_t crc = crc32Of(data);
  auto size = static_cast<uint32_t>(data.size());
  for (uint32_t word : {crc, size})
    for (int shift = 0; shift < 32; shift += 8)
      out.push_back(static_cast<uint8_t>(word >> shift));
  return out;
}

/// Writes a deflate bit stream (RFC 1951): header fields LSB first, Huffman
/// codes MSB first.
class DeflateBits {
public:
  void putBits(uint32_t value, int count) { // LSB first
    for (int i = 0; i < count; ++i)
      putBit((value >> i) & 1);
  }
  void putCode(uint32_t code, int length) { // MSB first
    for (int i = length - 1; i >= 0; --i)
      putBit((code >> i) & 1);
  }
  /// A literal byte in the fixed Huffman code.
  void putLiteral(uint8_t byte) {
    if (byte <= 143)
      putCode(0x30 + byte, 8);
    else
      putCode(0x190 + (byte - 144), 9);
  }
  std::vector<uint8_t> finish() {
    if (bitCount_ > 0)
      bytes_.push_back(current_);
    return std::move(bytes_);
  }

private:
  void putBit(uint32_t bit) {
    current_ |= static_cast<uint8_t>(bit << bitCount_);
    if (++bitCount_ == 8) {
      bytes_.push_back(current_);
      current_ = 0;
      bitCount_ = 0;
    }
  }
  std::vector<uint8_t> bytes_;
  uint8_t current_ = 0;
  int bitCount_ = 0;
};

/// A gzip file whose stream inflates to `prefix` followed by `zeros` zero
/// bytes, 1 + 258 * k of them (one literal, then 258-byte matches at 13 bits
/// each: about 160:1): a "gzip bomb" built by hand. The trailer's CRC is
/// real when `realTrailer` is set, else zero (computing it would take long).
std::vector<uint8_t> gzipZeroBomb(const std::vector<uint8_t> &prefix, uint64_t zeros,
                                  bool realTrailer) {
  REQUIRE(zeros % 258 == 1);
  DeflateBits bits;
  bits.putBits(1, 1); // BFINAL
  bits.putBits(1, 2); // BTYPE = 01, fixed Huffman codes
  for (uint8_t byte : prefix)
    bits.putLiteral(byte);
  bits.putLiteral(0);
  for (uint64_t left = zeros - 1; left >= 258; left -= 258) {
    bits.putCode(0xc5, 8); // length code 285: 258 bytes
    bits.putCode(0, 5);    // distance code 0: distance 1
  }
  bits.putCode(0, 7); // end of block
  std::vector<uint8_t> out = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  std::vector<uint8_t> deflated = bits.finish();
  out.insert(out.end(), deflated.begin(), deflated.end());
  uint32_t crc = 0;
  if (realTrailer) {
    std::vector<uint8_t> plain = prefix;
    plain.resize(prefix.size() + zeros, 0);
    crc = crc32Of(plain);
  }
  auto size = static_cast<uint32_t>(prefix.size() + zeros);
  for (uint32_t word : {crc, size})
    for (int shift = 0; shift < 32; shift += 8)
      out.push_back(static_cast<uint8_t>(word >> shift));
  return out;
}

/// The peak resident memory of this process so far, in MiB.
long peakResidentMiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024; // ru_maxrss is in KiB on Linux
}

/// The message of a failed read; the test fails if the read succeeded.
std::string errorOf(const Expected<HostTensor> &result) {
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code() == ErrorCode::FormatError);
  return result.error().message();
}

const std::vector<uint8_t> kImageBytes = {0, 1, 2, 127, 128, 255, 10, 20, 30, 40, 50, 60};

} // namespace

TEST_CASE("IDX reads unsigned-byte images and labels", "[idx]") {
  TempDir dir;
  std::string images = dir.file("images-idx3-ubyte");
  writeBytes(images, idxFile(0x08, {2, 2, 3}, kImageBytes));

  auto raw = readIdx(images);
  REQUIRE(raw.has_value());
  CHECK(raw->typeStr() == "f64[2,2,3]");
  CHECK(raw->toDoubles() == std::vector<double>{0, 1, 2, 127, 128, 255, 10, 20, 30, 40, 50, 60});

  auto normalized = readIdxImages(images);
  REQUIRE(normalized.has_value());
  CHECK(normalized->typeStr() == "f32[2,1,2,3]");
  CHECK(normalized->getDouble(0) == 0.0);
  CHECK(normalized->getDouble(5) == 1.0);
  CHECK(normalized->as<float>()[4] == static_cast<float>(128.0 / 255.0));
  CHECK(normalized->as<float>()[11] == static_cast<float>(60.0 / 255.0));

  auto unscaled = readIdxImages(images, /*normalize=*/false);
  REQUIRE(unscaled.has_value());
  CHECK(unscaled->getDouble(3) == 127.0);
  CHECK(unscaled->getDouble(11) == 60.0);

  std::string labels = dir.file("labels-idx1-ubyte");
  writeBytes(labels, idxFile(0x08, {5}, {3, 0, 9, 9, 1}));
  auto labelTensor = readIdxLabels(labels);
  REQUIRE(labelTensor.has_value());
  CHECK(labelTensor->typeStr() == "i64[5]");
  CHECK(
      std::vector<int64_t>(labelTensor->as<int64_t>().begin(), labelTensor->as<int64_t>().end()) ==
      std::vector<int64_t>{3, 0, 9, 9, 1});

  // The image and label readers check what they are given.
  auto wrongKind = readIdxLabels(images);
  REQUIRE_FALSE(wrongKind.has_value());
  CHECK_THAT(wrongKind.error().message(),
             Catch::Contains("expected unsigned-byte labels of shape [N]") &&
                 Catch::Contains("shape [2,2,3]"));
  CHECK_FALSE(readIdxImages(labels).has_value());
}

TEST_CASE("IDX decodes every big-endian element type", "[idx]") {
  TempDir dir;
  std::string path = dir.file("typed");
  writeBytes(path, idxFile(0x09, {3}, {0xff, 0x80, 0x7f}));
  CHECK(readIdx(path)->toDoubles() == std::vector<double>{-1, -128, 127});
  writeBytes(path, idxFile(0x0b, {2}, {0xff, 0xfe, 0x01, 0x02}));
  CHECK(readIdx(path)->toDoubles() == std::vector<double>{-2, 258});
  writeBytes(path, idxFile(0x0c, {1, 2}, {0x80, 0, 0, 0, 0x00, 0x01, 0x00, 0x00}));
  CHECK(readIdx(path)->toDoubles() == std::vector<double>{-2147483648.0, 65536});
  writeBytes(path, idxFile(0x0d, {2}, {0x3f, 0xc0, 0, 0, 0xc1, 0x20, 0, 0})); // 1.5f, -10f
  CHECK(readIdx(path)->toDoubles() == std::vector<double>{1.5, -10.0});
  writeBytes(path, idxFile(0x0e, {1}, {0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18}));
  CHECK(readIdx(path)->getDouble(0) == 0x1.921fb54442d18p+1); // pi
}

TEST_CASE("IDX reads gzipped files transparently", "[idx]") {
  TempDir dir;
  std::string path = dir.file("images-idx3-ubyte.gz");
  std::vector<uint8_t> plain = idxFile(0x08, {2, 2, 3}, kImageBytes);
  writeBytes(path, gzipStored(plain));
  auto images = readIdxImages(path, false);
  REQUIRE(images.has_value());
  CHECK(images->typeStr() == "f32[2,1,2,3]");
  CHECK(images->getDouble(7) == 20.0);

  // Larger than one stored block (65535 bytes) and than one read chunk.
  std::vector<uint8_t> big;
  for (int i = 0; i < 300 * 7 * 5; ++i)
    big.push_back(static_cast<uint8_t>(i * 7 + i / 256));
  // 300 * 35 = 10500 bytes per image set; make it 100x bigger: [3000, 7, 50].
  std::vector<uint8_t> data;
  for (int copy = 0; copy < 100; ++copy)
    data.insert(data.end(), big.begin(), big.end());
  writeBytes(path, gzipStored(idxFile(0x08, {3000, 7, 50}, data)));
  auto large = readIdx(path);
  REQUIRE(large.has_value());
  CHECK(large->typeStr() == "f64[3000,7,50]");
  CHECK(large->getDouble(0) == 0);
  CHECK(large->getDouble(1049999) == data[1049999]);
  CHECK(large->getDouble(70001) == data[70001]);

  SECTION("a corrupted checksum is an error") {
    std::vector<uint8_t> gz = gzipStored(plain);
    gz[gz.size() - 8] ^= 0x01;
    writeBytes(path, gz);
    auto result = readIdx(path);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == ErrorCode::FormatError);
    CHECK_THAT(result.error().message(), Catch::Contains("corrupt gzip data"));
  }
  SECTION("a cut-off gzip stream is an error") {
    std::vector<uint8_t> gz = gzipStored(plain);
    gz.resize(gz.size() - 12);
    writeBytes(path, gz);
    auto result = readIdx(path);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == ErrorCode::FormatError);
    CHECK_THAT(result.error().message(), Catch::Contains("truncated gzip stream"));
  }
}

TEST_CASE("IDX rejects bad files with precise messages", "[idx]") {
  TempDir dir;
  std::string path = dir.file("bad");

  SECTION("missing file") {
    auto result = readIdx(dir.file("absent-idx1-ubyte"));
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == ErrorCode::NotFound);
    CHECK_THAT(result.error().message(), Catch::Contains("absent-idx1-ubyte") &&
                                             Catch::Contains("No such file or directory"));
  }
  SECTION("bad magic") {
    writeBytes(path, {0x01, 0x00, 0x08, 0x01, 0, 0, 0, 0});
    auto result = readIdx(path);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == ErrorCode::FormatError);
    CHECK_THAT(result.error().message(),
               Catch::Contains("bad magic") && Catch::Contains("0x01 0x00"));
  }
  SECTION("unsupported type code") {
    writeBytes(path, idxFile(0x0a, {1}, {0}));
    CHECK_THAT(errorOf(readIdx(path)), Catch::Contains("unsupported IDX type code 0x0a"));
  }
  SECTION("truncated data says expected and actual bytes") {
    std::vector<uint8_t> bytes = idxFile(0x08, {2, 2, 3}, kImageBytes);
    bytes.resize(bytes.size() - 2);
    writeBytes(path, bytes);
    auto result = readIdx(path);
    REQUIRE_FALSE(result.has_value());
    CHECK_THAT(result.error().message(), Catch::Contains("truncated data: expected 28 bytes") &&
                                             Catch::Contains("file size is 26 bytes"));
    // Through gzip the message talks about the decompressed size.
    writeBytes(path, gzipStored(bytes));
    CHECK_THAT(errorOf(readIdx(path)), Catch::Contains("decompressed size is 26 bytes"));
  }
  SECTION("truncated header") {
    writeBytes(path, {0x00, 0x00, 0x08});
    CHECK_THAT(errorOf(readIdx(path)), Catch::Contains("truncated IDX header"));
    writeBytes(path, {0x00, 0x00, 0x08, 0x03, 0, 0, 0, 2});
    CHECK_THAT(errorOf(readIdx(path)), Catch::Contains("expected 16 bytes for 3 dimensions"));
  }
  SECTION("a zero dimension does not hide the size of the others") {
    // Found by idx_fuzzer (tests/fuzz/idx-corpus/zero-dim-huge.idx): the element count was
    // 0, so the bound never saw the other dimensions and HostTensor refused the shape with
    // an InvalidArgument instead of a FormatError.
    writeBytes(path, idxFile(0x0e, {0, 1u << 31, 1u << 31, 1u << 31}, {}));
    auto result = readIdx(path);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == ErrorCode::FormatError);
    CHECK_THAT(result.error().message(),
               Catch::Contains("IDX dimensions [0,2147483648,2147483648,2147483648] describe "
                               "more than 2^30 elements (counting the non-zero ones)"));
    writeBytes(path, idxFile(0x08, {0, 65536, 65536}, {}));
    CHECK_THAT(errorOf(readIdx(path)), Catch::Contains("more than 2^30 elements"));
    // Within the bound a zero dimension is an empty tensor of that shape.
    writeBytes(path, idxFile(0x08, {3, 0, 28}, {}));
    auto empty = readIdx(path);
    REQUIRE(empty.has_value());
    CHECK(empty->shape() == std::vector<int64_t>{3, 0, 28});
    CHECK(empty->numElements() == 0);
  }
  SECTION("trailing bytes") {
    std::vector<uint8_t> bytes = idxFile(0x08, {3}, {1, 2, 3, 4});
    writeBytes(path, bytes);
    CHECK_THAT(errorOf(readIdx(path)),
               Catch::Contains("trailing bytes") && Catch::Contains("expected 11 bytes"));
  }
}

TEST_CASE("IDX checks a gzip file's header before inflating its data", "[idx]") {
  TempDir dir;
  std::string path = dir.file("bomb-idx3-ubyte.gz");

  SECTION("the hand-made deflate stream is what a reader inflates") {
    writeBytes(path, gzipZeroBomb(idxFile(0x08, {1033}, {}), 1033, /*realTrailer=*/true));
    auto zeros = readIdx(path);
    REQUIRE(zeros.has_value());
    CHECK(zeros->toDoubles() == std::vector<double>(1033, 0.0));
    // With the dummy trailer the CRC check fails, after all the data.
    writeBytes(path, gzipZeroBomb(idxFile(0x08, {1033}, {}), 1033, /*realTrailer=*/false));
    CHECK_THAT(errorOf(readIdx(path)), Catch::Contains("corrupt gzip data"));
  }
  SECTION("a header claiming more than 2^30 elements is rejected without inflating") {
    // 6.8 MB on disk inflating to 1 GiB: the header claims 2^31 bytes. A
    // reader that inflates everything first needs a gigabyte to say no.
    std::vector<uint8_t> header = idxFile(0x08, {32768, 32768, 2}, {});
    writeBytes(path, gzipZeroBomb(header, 258 * 4161793 + 1, /*realTrailer=*/false));
    long before = peakResidentMiB();
    CHECK_THAT(errorOf(readIdx(path)),
               Catch::Contains("IDX dimensions [32768,32768,2] describe more than 2^30 elements"));
    CHECK(peakResidentMiB() - before < 256);
  }
  SECTION("a header claiming more than the file holds costs only what it holds") {
    // 2^29 elements claimed, 12 present: the buffer grows with the data.
    std::vector<uint8_t> bytes = idxFile(0x08, {8192, 256, 256}, kImageBytes);
    writeBytes(path, gzipStored(bytes));
    long before = peakResidentMiB();
    CHECK_THAT(errorOf(readIdx(path)),
               Catch::Contains("truncated data: expected 536870928 bytes (16 header + 536870912 "
                               "unsigned byte elements of shape [8192,256,256])") &&
                   Catch::Contains("the decompressed size is 28 bytes"));
    CHECK(peakResidentMiB() - before < 256);
  }
}

TEST_CASE("IDX reads the Fashion-MNIST test set", "[idx][dataset]") {
  const std::string root = "/usr/share/datasets/fashion-mnist/";
  const std::string labelsPath = root + "t10k-labels-idx1-ubyte.gz";
  const std::string imagesPath = root + "t10k-images-idx3-ubyte.gz";
  if (!std::filesystem::exists(labelsPath) || !std::filesystem::exists(imagesPath)) {
    WARN("Fashion-MNIST not installed at " << root
                                           << " (Debian package dataset-fashion-mnist): "
                                              "real-data checks not run");
    return;
  }
  auto labels = readIdxLabels(labelsPath);
  REQUIRE(labels.has_value());
  CHECK(labels->typeStr() == "i64[10000]");
  std::array<int, 10> perClass{};
  bool inRange = true;
  for (int64_t label : labels->as<int64_t>()) {
    inRange &= label >= 0 && label <= 9;
    if (label >= 0 && label <= 9)
      ++perClass[static_cast<size_t>(label)];
  }
  CHECK(inRange);
  for (int count : perClass)
    CHECK(count == 1000);

  auto images = readIdxImages(imagesPath);
  REQUIRE(images.has_value());
  CHECK(images->typeStr() == "f32[10000,1,28,28]");
  float minimum = 1;
  float maximum = 0;
  double sum = 0;
  for (float value : images->as<float>()) {
    minimum = std::min(minimum, value);
    maximum = std::max(maximum, value);
    sum += value;
  }
  CHECK(minimum == 0.0f);
  CHECK(maximum == 1.0f);
  // Fashion-MNIST's mean pixel is about 0.286 (72.9 / 255).
  CHECK(sum / images->numElements() == Approx(0.286).margin(0.01));
}
