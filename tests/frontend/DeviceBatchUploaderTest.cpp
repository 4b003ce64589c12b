// Tests of the device batch uploader on the SIMT simulator's device: the
// bytes arrive, slots rotate and must be released, mismatched batches are
// refused, and everything allocated is freed.
#include "frontend/data/DeviceBatchUploader.h"

#include "runtime/sim/SimDevice.h"

#include <catch2/catch.hpp>

using namespace kiln;
using namespace kiln::data;

namespace {

NamedTensors randomBatch(uint64_t seed) {
  Rng rng(seed);
  NamedTensors batch;
  batch.emplace("images", HostTensor::randomUniform(DType::F32, {3, 1, 5, 5}, rng));
  HostTensor labels(DType::I64, {3});
  for (int64_t i = 0; i < 3; ++i)
    labels.setDouble(i, static_cast<double>(rng.nextU64() % 10));
  batch.emplace("labels", std::move(labels));
  return batch;
}

} // namespace

TEST_CASE("Batches uploaded through pinned slots arrive intact", "[data][device]") {
  auto device = std::make_shared<sim::SimDevice>();
  {
    auto uploader = DeviceBatchUploader::create(device, randomBatch(0));
    REQUIRE(uploader.has_value());
    CHECK((*uploader)->numSlots() == 2);
    auto compute = device->createStream();
    REQUIRE(compute.has_value());
    for (uint64_t step = 0; step < 5; ++step) {
      NamedTensors batch = randomBatch(step + 1);
      auto uploaded = (*uploader)->upload(batch);
      REQUIRE(uploaded.has_value());
      CHECK(uploaded->slot == static_cast<int64_t>(step % 2));
      REQUIRE((*uploader)->waitUntilUploaded(*uploaded, *compute).has_value());
      for (const auto &[name, tensor] : batch) {
        HostTensor back(tensor.dtype(), tensor.shape());
        REQUIRE(device
                    ->copyToHost(back.bytes().data(), uploaded->buffers.at(name),
                                 static_cast<int64_t>(back.byteSize()), *compute)
                    .has_value());
        REQUIRE(device->synchronize(*compute).has_value());
        CHECK(std::ranges::equal(back.bytes(), tensor.bytes()));
      }
      REQUIRE((*uploader)->release(*uploaded, *compute).has_value());
    }
    device->destroyStream(*compute);
  }
  sim::SimDevice::Census census = device->census();
  CHECK(census.allocations == 0);
  CHECK(census.pinned == 0);
  CHECK(census.streams == 0);
  CHECK(census.events == 0);
}

TEST_CASE("The batch uploader refuses misuse with a clear error", "[data][device]") {
  auto device = std::make_shared<sim::SimDevice>();
  auto uploader = DeviceBatchUploader::create(device, randomBatch(0));
  REQUIRE(uploader.has_value());

  NamedTensors wrongShape = randomBatch(1);
  wrongShape.at("labels") = HostTensor(DType::I64, {4});
  auto refused = (*uploader)->upload(wrongShape);
  REQUIRE_FALSE(refused.has_value());
  CHECK_THAT(refused.error().message(),
             Catch::Contains("\"labels\" is i64[4], the layout says i64[3]"));
  NamedTensors missing = randomBatch(1);
  missing.erase("images");
  missing.emplace("pictures", HostTensor(DType::F32, {3, 1, 5, 5}));
  auto unnamed = (*uploader)->upload(missing);
  REQUIRE_FALSE(unnamed.has_value());
  CHECK_THAT(unnamed.error().message(), Catch::Contains("no tensor \"images\""));

  // Two slots: a third upload before any release would overwrite a batch in use.
  auto first = (*uploader)->upload(randomBatch(2));
  auto second = (*uploader)->upload(randomBatch(3));
  REQUIRE((first.has_value() && second.has_value()));
  auto third = (*uploader)->upload(randomBatch(4));
  REQUIRE_FALSE(third.has_value());
  CHECK_THAT(third.error().message(), Catch::Contains("all 2 slots hold batches"));
  REQUIRE((*uploader)->release(*first, runtime::Stream{}).has_value());
  auto released = (*uploader)->release(*first, runtime::Stream{});
  REQUIRE_FALSE(released.has_value());
  CHECK_THAT(released.error().message(), Catch::Contains("slot 0 holds no uploaded batch"));
  CHECK((*uploader)->upload(randomBatch(4)).has_value());

  auto oneSlot = DeviceBatchUploader::create(device, randomBatch(0), 1);
  REQUIRE_FALSE(oneSlot.has_value());
  CHECK_THAT(oneSlot.error().message(), Catch::Contains("at least 2"));
  auto empty = DeviceBatchUploader::create(device, {});
  REQUIRE_FALSE(empty.has_value());
}

TEST_CASE("A batch uploaded ahead waits in its slot while others turn over", "[data][device]") {
  auto device = std::make_shared<sim::SimDevice>();
  {
    auto uploader = DeviceBatchUploader::create(device, randomBatch(0));
    REQUIRE(uploader.has_value());
    auto compute = device->createStream();
    REQUIRE(compute.has_value());
    NamedTensors aheadBatch = randomBatch(1);
    auto ahead = (*uploader)->upload(aheadBatch);
    REQUIRE(ahead.has_value());
    CHECK(ahead->slot == 0);
    CHECK((*uploader)->holdsSame(*ahead, aheadBatch));
    CHECK_FALSE((*uploader)->holdsSame(*ahead, randomBatch(2)));
    // Three uploads while the one ahead waits: all go to the free slot.
    for (uint64_t step = 0; step < 3; ++step) {
      auto uploaded = (*uploader)->upload(randomBatch(10 + step));
      REQUIRE(uploaded.has_value());
      CHECK(uploaded->slot == 1);
      REQUIRE((*uploader)->waitUntilUploaded(*uploaded, *compute).has_value());
      REQUIRE((*uploader)->release(*uploaded, *compute).has_value());
    }
    CHECK((*uploader)->holdsSame(*ahead, aheadBatch));
    // Discarded without compute: the slot is free again, and a second
    // discard does nothing; a discarded batch is no longer "the same".
    REQUIRE((*uploader)->discard(*ahead).has_value());
    REQUIRE((*uploader)->discard(*ahead).has_value());
    CHECK_FALSE((*uploader)->holdsSame(*ahead, aheadBatch));
    auto first = (*uploader)->upload(randomBatch(3));
    auto second = (*uploader)->upload(randomBatch(4));
    REQUIRE((first.has_value() && second.has_value()));
    CHECK(first->slot != second->slot);
    REQUIRE((*uploader)->discard(*first).has_value());
    REQUIRE((*uploader)->discard(*second).has_value());
    device->destroyStream(*compute);
  }
  CHECK(device->census().events == 0);
}
