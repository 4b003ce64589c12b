// Tests of the Fashion-MNIST loader: hand-made IDX files, missing and corrupt
// files (the error names the file), and the real data set when installed.
#include "frontend/data/FashionMnist.h"
#include "frontend/data/Normalization.h"
#include "frontend/io/Idx.h"

#include "frontend/TempDir.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>

using namespace kiln;
using namespace kiln::data;
using kiln::testing::readBytes;
using kiln::testing::TempDir;
using kiln::testing::writeBytes;

namespace {

std::vector<uint8_t> idxHeader(uint8_t rank, const std::vector<uint32_t> &dims) {
  std::vector<uint8_t> bytes = {0, 0, 0x08, rank};
  for (uint32_t dim : dims)
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<uint8_t>(dim >> shift));
  return bytes;
}

/// `count` images of height x width, pixel k of the file holding k % 256.
std::vector<uint8_t> imageFile(uint32_t count, uint32_t height = 28, uint32_t width = 28) {
  std::vector<uint8_t> bytes = idxHeader(3, {count, height, width});
  for (uint32_t k = 0; k < count * height * width; ++k)
    bytes.push_back(static_cast<uint8_t>(k % 256));
  return bytes;
}

std::vector<uint8_t> labelFile(const std::vector<uint8_t> &labels) {
  std::vector<uint8_t> bytes = idxHeader(1, {static_cast<uint32_t>(labels.size())});
  bytes.insert(bytes.end(), labels.begin(), labels.end());
  return bytes;
}

std::string errorOf(const Expected<LabeledImages> &loaded) {
  REQUIRE_FALSE(loaded.has_value());
  return loaded.error().str();
}

const std::string kInstalled = kFashionMnistDirectory;

bool installed() {
  return std::filesystem::exists(kInstalled + "/train-images-idx3-ubyte.gz") &&
         std::filesystem::exists(kInstalled + "/t10k-labels-idx1-ubyte.gz");
}

} // namespace

TEST_CASE("Fashion-MNIST loads hand-made uncompressed files", "[data][fashion]") {
  TempDir dir;
  writeBytes(dir.file("t10k-images-idx3-ubyte"), imageFile(3));
  writeBytes(dir.file("t10k-labels-idx1-ubyte"), labelFile({9, 0, 4}));
  auto test = loadFashionMnist(Split::Test, dir.path().string());
  REQUIRE(test.has_value());
  CHECK(test->images.typeStr() == "f32[3,1,28,28]");
  CHECK(test->labels.typeStr() == "i64[3]");
  CHECK(test->labels.toDoubles() == std::vector<double>{9, 0, 4});
  for (int64_t k : {0, 1, 255, 256, 1000, 3 * 784 - 1})
    CHECK(test->images.getDouble(k) == static_cast<double>(static_cast<float>((k % 256) / 255.0)));
  CHECK(std::string(kFashionMnistClassNames[9]) == "Ankle boot");
  CHECK(std::string(splitName(Split::Test)) == "test");

  // The training split reads the train-* files, which are absent here.
  auto train = loadFashionMnist(Split::Train, dir.path().string());
  CHECK_THAT(errorOf(train), Catch::Contains(dir.file("train-images-idx3-ubyte.gz")) &&
                                 Catch::Contains("dataset-fashion-mnist"));
  CHECK(train.error().code() == ErrorCode::NotFound);
}

TEST_CASE("Fashion-MNIST errors name the bad file", "[data][fashion]") {
  TempDir dir;
  const std::string images = dir.file("train-images-idx3-ubyte");
  const std::string labels = dir.file("train-labels-idx1-ubyte");
  auto load = [&] { return loadFashionMnist(Split::Train, dir.path().string()); };

  writeBytes(images, imageFile(2));
  auto noLabels = load();
  CHECK_THAT(errorOf(noLabels), Catch::Contains(labels + ".gz"));

  SECTION("truncated labels") {
    std::vector<uint8_t> truncated = labelFile({1, 2});
    truncated.pop_back();
    writeBytes(labels, truncated);
    auto loaded = load();
    CHECK_THAT(errorOf(loaded), Catch::Contains(labels) && Catch::Contains("truncated"));
    CHECK(loaded.error().code() == ErrorCode::FormatError);
  }
  SECTION("truncated images") {
    std::vector<uint8_t> truncated = imageFile(2);
    truncated.resize(truncated.size() - 100);
    writeBytes(images, truncated);
    writeBytes(labels, labelFile({1, 2}));
    CHECK_THAT(errorOf(load()), Catch::Contains(images) && Catch::Contains("truncated"));
  }
  SECTION("counts that disagree") {
    writeBytes(labels, labelFile({1, 2, 3}));
    CHECK_THAT(errorOf(load()), Catch::Contains(labels + " holds 3 labels but " + images +
                                                " holds 2 images"));
  }
  SECTION("a label outside 0..9") {
    writeBytes(labels, labelFile({1, 12}));
    CHECK_THAT(errorOf(load()), Catch::Contains(labels + ": label 1 is 12"));
  }
  SECTION("images of another size") {
    writeBytes(images, imageFile(2, 28, 27));
    writeBytes(labels, labelFile({1, 2}));
    CHECK_THAT(errorOf(load()), Catch::Contains(images) && Catch::Contains("28x27"));
  }
  SECTION("labels in an image file") {
    writeBytes(images, labelFile({1, 2}));
    writeBytes(labels, labelFile({1, 2}));
    CHECK_THAT(errorOf(load()), Catch::Contains(images));
  }
  SECTION("a corrupt gzip file") {
    if (!installed()) {
      WARN("Fashion-MNIST not installed: the cut real gzip file is not checked");
      return;
    }
    // The first 2000 bytes of the real file: a gzip stream cut short.
    std::vector<uint8_t> real = readBytes(kInstalled + "/train-labels-idx1-ubyte.gz");
    real.resize(2000);
    writeBytes(labels + ".gz", real);
    auto loaded = load();
    CHECK_THAT(errorOf(loaded), Catch::Contains(labels + ".gz"));
    CHECK(loaded.error().code() == ErrorCode::FormatError);
  }
}

TEST_CASE("Fashion-MNIST's installed test split", "[data][fashion][dataset]") {
  if (!installed()) {
    WARN("Fashion-MNIST not installed at " << kInstalled
                                           << " (Debian package dataset-fashion-mnist): "
                                              "real-data checks not run");
    return;
  }
  auto test = loadFashionMnist(Split::Test);
  REQUIRE(test.has_value());
  CHECK(test->images.typeStr() == "f32[10000,1,28,28]");
  CHECK(test->labels.typeStr() == "i64[10000]");
  std::array<int, 10> perClass{};
  for (int64_t label : test->labels.as<int64_t>())
    ++perClass[static_cast<size_t>(label)];
  for (int count : perClass)
    CHECK(count == 1000);
  // The test split's statistics (0.2868, 0.3524) lie near the training set's
  // constants; the exact check is the hidden full-split test below.
  auto stats = channelStatistics(test->images);
  REQUIRE(stats.has_value());
  CHECK(stats->mean[0] == Approx(kFashionMnistMean).margin(2e-3));
  CHECK(stats->stddev[0] == Approx(kFashionMnistStddev).margin(2e-3));
}

TEST_CASE("Fashion-MNIST's training split and its normalization constants",
          "[data][fashion][dataset]") {
  if (!installed()) {
    WARN("Fashion-MNIST not installed at " << kInstalled << ": real-data checks not run");
    return;
  }
  auto labels = io::readIdxLabels(kInstalled + "/train-labels-idx1-ubyte.gz");
  REQUIRE(labels.has_value());
  std::array<int, 10> perClass{};
  for (int64_t label : labels->as<int64_t>())
    ++perClass[static_cast<size_t>(std::clamp<int64_t>(label, 0, 9))];
  for (int count : perClass)
    CHECK(count == 6000);
  // Reading the 47M training pixels takes seconds under the sanitizers, so
  // the suite does it only when asked.
  if (!std::getenv("KILN_FULL_DATASET_TESTS")) {
    WARN("the training images are checked only with KILN_FULL_DATASET_TESTS=1");
    return;
  }
  auto train = loadFashionMnist(Split::Train);
  REQUIRE(train.has_value());
  CHECK(train->images.typeStr() == "f32[60000,1,28,28]");
  CHECK(train->labels.typeStr() == "i64[60000]");
  auto stats = channelStatistics(train->images);
  REQUIRE(stats.has_value());
  CHECK(stats->mean[0] == Approx(kFashionMnistMean).margin(5e-5));
  CHECK(stats->stddev[0] == Approx(kFashionMnistStddev).margin(5e-5));
}
