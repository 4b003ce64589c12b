// Checkpoint files without a model: a sealed state round-trips bit for bit;
// a changed byte, an unsealed file, out-of-range scalars, non-finite tensors
// and another trainer's layout are refused with errors naming the file and
// the entry.
#include "compiler/training/Checkpoint.h"
#include "frontend/TempDir.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

using namespace kiln;
using namespace kiln::training;

namespace {

CheckpointState sampleState() {
  CheckpointState state;
  state.tensors.emplace("w", HostTensor::fromDoubles(DType::F32, {2, 3},
                                                     std::vector<double>{1, -2, 3.5, 0, 7, -0.25}));
  state.tensors.emplace("train.momentum.w", HostTensor(DType::F32, {2, 3}));
  state.stepCount = 12;
  state.learningRate = 0.05;
  state.lossScale = 1024;
  state.goodSteps = 3;
  state.run = {{"run.batch", "64"}};
  return state;
}

std::string errorOf(const CheckpointState &state, const CheckpointLayout *layout = nullptr) {
  auto decoded = decodeCheckpoint(encodeCheckpoint(state), "ck.safetensors", layout);
  REQUIRE_FALSE(decoded);
  CHECK(decoded.error().code() == ErrorCode::FormatError);
  CHECK_THAT(decoded.error().message(), Catch::StartsWith("checkpoint ck.safetensors: "));
  return decoded.error().message();
}

bool sameBits(const HostTensor &a, const HostTensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0;
}

} // namespace

TEST_CASE("a checkpoint round-trips its state through a sealed file", "[checkpoint]") {
  testing::TempDir dir;
  std::string path = dir.file("ck.safetensors");
  CheckpointState state = sampleState();
  // A step count past 2^53 stays exact: integers are not read through a double.
  state.stepCount = (int64_t{1} << 60) + 1;
  REQUIRE(writeCheckpoint(path, state));
  auto read = readCheckpoint(path);
  REQUIRE(read);
  CHECK(read->stepCount == state.stepCount);
  CHECK(read->learningRate == 0.05);
  CHECK(read->lossScale == 1024);
  CHECK(read->goodSteps == 3);
  CHECK(read->run == state.run);
  REQUIRE(read->tensors.size() == 2);
  for (const auto &[name, tensor] : state.tensors)
    CHECK(sameBits(read->tensors.at(name), tensor));
  auto raw = io::readSafetensors(path);
  REQUIRE(raw);
  CHECK(raw->metadata.at(std::string(kCheckpointFormatKey)) == kCheckpointFormat);
  CHECK(raw->metadata.at(std::string(kCheckpointChecksumKey)).size() == 32);
}

TEST_CASE("a changed byte, a changed entry or a missing seal is refused", "[checkpoint]") {
  testing::TempDir dir;
  std::string path = dir.file("ck.safetensors");
  REQUIRE(writeCheckpoint(path, sampleState()));
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  SECTION("a flipped bit in the last tensor's data") {
    bytes[bytes.size() - 5] ^= 0x10;
    auto contents = io::parseSafetensors(bytes, path);
    REQUIRE(contents);
    auto decoded = decodeCheckpoint(*contents, path);
    REQUIRE_FALSE(decoded);
    CHECK_THAT(decoded.error().message(),
               Catch::StartsWith("checkpoint " + path + ": checksum mismatch") &&
                   Catch::Contains("changed or damaged after it was written"));
  }
  SECTION("a run entry edited in the header") {
    auto contents = io::readSafetensors(path);
    REQUIRE(contents);
    contents->metadata.at("run.batch") = "32";
    auto decoded = decodeCheckpoint(*contents, path);
    REQUIRE_FALSE(decoded);
    CHECK_THAT(decoded.error().message(), Catch::Contains("checksum mismatch"));
  }
  SECTION("a file without the seal (another tool, or an older kiln)") {
    auto contents = io::readSafetensors(path);
    REQUIRE(contents);
    contents->metadata.clear();
    REQUIRE(io::saveSafetensors(path, contents->tensors));
    auto read = readCheckpoint(path);
    REQUIRE_FALSE(read);
    CHECK_THAT(read.error().message(),
               Catch::Contains("has no \"kiln.format\" and \"kiln.checksum\"") &&
                   Catch::Contains("cannot be verified") && Catch::Contains(path));
  }
  SECTION("a format this kiln does not read") {
    auto contents = io::readSafetensors(path);
    REQUIRE(contents);
    contents->metadata.at(std::string(kCheckpointFormatKey)) = "kiln checkpoint 99";
    auto decoded = decodeCheckpoint(*contents, path);
    REQUIRE_FALSE(decoded);
    CHECK_THAT(decoded.error().message(), Catch::Contains("format is \"kiln checkpoint 99\""));
  }
  SECTION("a truncated file names the file") {
    auto cut = io::parseSafetensors(std::string_view(bytes).substr(0, bytes.size() / 2), path);
    REQUIRE_FALSE(cut);
    CHECK_THAT(cut.error().message(), Catch::StartsWith(path));
  }
}

TEST_CASE("a sealed checkpoint with values out of range is still refused", "[checkpoint]") {
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  CheckpointState state = sampleState();
  state.learningRate = kNan;
  CHECK_THAT(errorOf(state), Catch::Contains("learning rate nan is not a finite number > 0"));
  state.learningRate = 0;
  CHECK_THAT(errorOf(state), Catch::Contains("learning rate 0 is not a finite number > 0"));
  state = sampleState();
  state.stepCount = -3;
  CHECK_THAT(errorOf(state), Catch::Contains("step count -3 is negative"));
  state = sampleState();
  state.lossScale = kInf;
  CHECK_THAT(errorOf(state), Catch::Contains("loss scale inf is not a finite number > 0"));
  state.lossScale = -1;
  CHECK_THAT(errorOf(state), Catch::Contains("loss scale -1 is not a finite number > 0"));
  state = sampleState();
  state.goodSteps = -1;
  CHECK_THAT(errorOf(state), Catch::Contains("good step count -1 is negative"));
  state = sampleState();
  state.tensors.at("train.momentum.w").setDouble(4, kNan);
  CHECK_THAT(errorOf(state), Catch::Contains("'train.momentum.w' holds nan at element 4"));
  state = sampleState();
  state.run.emplace("kiln.extra", "1");
  CHECK_THAT(errorOf(state), Catch::Contains("'kiln.extra' uses the prefix 'kiln.'"));

  // Nor does a trainer write one.
  testing::TempDir dir;
  state = sampleState();
  state.tensors.at("w").setDouble(0, -kInf);
  auto written = writeCheckpoint(dir.file("bad.safetensors"), state);
  REQUIRE_FALSE(written);
  CHECK_THAT(written.error().message(), Catch::Contains("'w' holds -inf at element 0"));
  CHECK(dir.entries().empty());
}

TEST_CASE("a checkpoint of another layout lists every difference", "[checkpoint]") {
  CheckpointLayout layout = {
      {"w", ir::TensorType{DType::F32, {2, 3}}},
      {"b", ir::TensorType{DType::F32, {3}}},
      {"train.momentum.w", ir::TensorType{DType::F32, {3, 2}}},
  };
  CheckpointState state = sampleState();
  state.tensors.emplace("extra", HostTensor(DType::F32, {1}));
  CHECK_THAT(errorOf(state, &layout),
             Catch::Contains("lacks 'b'; 'train.momentum.w' is f32[2,3], this trainer expects "
                             "f32[3,2]; has 'extra', which this trainer does not know"));
  state = sampleState();
  layout.erase("b");
  layout.at("train.momentum.w") = ir::TensorType{DType::F32, {2, 3}};
  CHECK(decodeCheckpoint(encodeCheckpoint(state), "ck", &layout));
}
