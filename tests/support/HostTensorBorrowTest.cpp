// Tests of HostTensors that borrow memory someone else owns (HostTensor::borrow): read in
// place, never written (mutable access copies first), copies own their bytes, the owner
// lives as long as the view, and memory kernels cannot read in place is refused.
#include "support/HostTensor.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

using namespace kiln;

namespace {

/// Six f32 values at a kBufferAlignment-aligned address, owned by a shared_ptr (as a numpy
/// array's memory is owned by the array).
std::shared_ptr<float[]> alignedFloats() {
  auto *data = static_cast<float *>(::operator new(64 * sizeof(float),
                                                   std::align_val_t{kBufferAlignment}));
  for (int i = 0; i < 64; ++i)
    data[i] = 0.5f * static_cast<float>(i) - 1.0f;
  return std::shared_ptr<float[]>(
      data, [](float *p) { ::operator delete(p, std::align_val_t{kBufferAlignment}); });
}

std::span<const uint8_t> bytesOf(const float *data, size_t count) {
  return {reinterpret_cast<const uint8_t *>(data), count * sizeof(float)};
}

} // namespace

TEST_CASE("HostTensor::borrow reads the caller's memory in place", "[hosttensor]") {
  std::shared_ptr<float[]> memory = alignedFloats();
  HostTensor view = HostTensor::borrow(DType::F32, {2, 3}, bytesOf(memory.get(), 6), memory)
                        .value();
  CHECK(view.isBorrowed());
  const HostTensor &constView = view;
  CHECK(constView.bytes().data() == reinterpret_cast<const uint8_t *>(memory.get()));
  CHECK(constView.getDouble(5) == 1.5);
  memory[5] = 42.0f; // the caller's later writes are what the view reads
  CHECK(constView.getDouble(5) == 42.0);
  CHECK(view.typeStr() == "f32[2,3]");
}

TEST_CASE("HostTensor: a borrowed tensor keeps its owner alive, and moves keep the view",
          "[hosttensor]") {
  std::shared_ptr<float[]> memory = alignedFloats();
  std::weak_ptr<float[]> watch = memory;
  std::span<const uint8_t> bytes = bytesOf(memory.get(), 6);
  HostTensor view = HostTensor::borrow(DType::F32, {6}, bytes, std::move(memory)).value();
  CHECK(!watch.expired());
  HostTensor moved = std::move(view);
  CHECK(moved.isBorrowed());
  CHECK(std::as_const(moved).bytes().data() == bytes.data());
  CHECK(view.byteSize() == 0); // NOLINT(bugprone-use-after-move): moved-from is empty
  CHECK(!watch.expired());
  moved = HostTensor(DType::F32, {1});
  CHECK(watch.expired());
}

TEST_CASE("HostTensor: kiln never writes borrowed memory", "[hosttensor]") {
  std::shared_ptr<float[]> memory = alignedFloats();
  std::vector<float> before(memory.get(), memory.get() + 6);
  HostTensor view = HostTensor::borrow(DType::F32, {6}, bytesOf(memory.get(), 6), memory)
                        .value();

  SECTION("a copy owns its bytes") {
    HostTensor copy = view;
    CHECK(!copy.isBorrowed());
    CHECK(std::as_const(copy).bytes().data() != std::as_const(view).bytes().data());
    copy.setDouble(0, 9.0);
    CHECK(memory[0] == before[0]);
  }
  SECTION("setDouble writes a copy of its own") {
    view.setDouble(0, 9.0);
    CHECK(!view.isBorrowed());
    CHECK(view.getDouble(0) == 9.0);
    CHECK(view.getDouble(1) == before[1]);
  }
  SECTION("mutable bytes() and as() copy first") {
    view.as<float>()[2] = 7.0f;
    CHECK(!view.isBorrowed());
    view.bytes()[0] = 0xFF;
  }
  CHECK(std::memcmp(memory.get(), before.data(), 6 * sizeof(float)) == 0);
}

TEST_CASE("HostTensor::borrow refuses memory kernels cannot read in place, and bad shapes",
          "[hosttensor]") {
  std::shared_ptr<float[]> memory = alignedFloats();
  // One float in: 4-byte aligned, not 64.
  auto misaligned = HostTensor::borrow(DType::F32, {6}, bytesOf(memory.get() + 1, 6), memory);
  REQUIRE(!misaligned);
  CHECK(misaligned.error().message().find("not 64-byte aligned") != std::string::npos);
  CHECK(!AlignedBytes::isBorrowable(memory.get() + 1));
  CHECK(AlignedBytes::isBorrowable(memory.get() + 16));

  auto wrongSize = HostTensor::borrow(DType::F32, {2, 4}, bytesOf(memory.get(), 6), memory);
  REQUIRE(!wrongSize);
  CHECK(wrongSize.error().message() == "cannot borrow tensor f32[2,4]: it needs 32 bytes, the "
                                     "memory has 24");
  auto negative = HostTensor::borrow(DType::F32, {-1, 6}, bytesOf(memory.get(), 6), memory);
  REQUIRE(!negative);
  CHECK(negative.error().code() == ErrorCode::InvalidArgument);

  // Nothing to view: an empty tensor of its own, whatever the address.
  HostTensor empty = HostTensor::borrow(DType::F32, {0, 3}, {}, nullptr).value();
  CHECK(!empty.isBorrowed());
  CHECK(empty.byteSize() == 0);
}
