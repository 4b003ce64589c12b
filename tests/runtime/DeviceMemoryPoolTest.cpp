// DeviceMemoryPool on a fake host-memory device: size classes, reuse, stream
// ordering through events, trimming, the out-of-memory retry and its error,
// and concurrent use.
#include "runtime/DeviceMemoryPool.h"

#include "runtime/FakeDevice.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <random>
#include <set>
#include <thread>

using namespace kiln;
using runtime::DeviceMemoryPool;
using runtime::DevicePtr;
using runtime::Stream;
using runtime::testing::FakeDevice;

namespace {

constexpr int64_t kMiB = 1 << 20;

DevicePtr allocateOk(DeviceMemoryPool &pool, int64_t bytes, Stream stream) {
  Expected<DevicePtr> ptr = pool.allocate(bytes, stream);
  if (!ptr)
    FAIL(ptr.error().str());
  return *ptr;
}

} // namespace

TEST_CASE("size classes round small requests to 256 bytes and large ones to 2 MiB", "[pool]") {
  CHECK(DeviceMemoryPool::roundedSize(0) == 256);
  CHECK(DeviceMemoryPool::roundedSize(1) == 256);
  CHECK(DeviceMemoryPool::roundedSize(256) == 256);
  CHECK(DeviceMemoryPool::roundedSize(257) == 512);
  CHECK(DeviceMemoryPool::roundedSize(kMiB - 1) == kMiB);
  CHECK(DeviceMemoryPool::roundedSize(kMiB) == 2 * kMiB);
  CHECK(DeviceMemoryPool::roundedSize(2 * kMiB + 1) == 4 * kMiB);
}

TEST_CASE("a released block is reused on its stream without a device allocation", "[pool]") {
  FakeDevice device;
  Stream stream = *device.createStream();
  {
    DeviceMemoryPool pool(device);
    DevicePtr first = allocateOk(pool, 1000, stream);
    pool.release(first, stream);
    DevicePtr second = allocateOk(pool, 900, stream); // same 1 KiB class
    CHECK(second == first);
    runtime::PoolStats stats = pool.stats();
    CHECK(stats.allocations == 2);
    CHECK(stats.cacheHits == 1);
    CHECK(stats.deviceAllocations == 1);
    CHECK(device.allocateCalls() == 1);
    CHECK(stats.bytesInUse == 1024);
    CHECK(stats.bytesCached == 0);
    pool.release(second, stream);
  }
  // The pool's destructor gives every cached block (and event) back.
  CHECK(device.liveBytes() == 0);
  CHECK(device.liveEvents() == 0);
  CHECK(device.badFrees() == 0);
}

TEST_CASE("best fit takes the smallest cached block and never one over twice the class",
          "[pool]") {
  FakeDevice device;
  Stream stream = *device.createStream();
  DeviceMemoryPool pool(device);
  DevicePtr big = allocateOk(pool, 8192, stream);
  DevicePtr medium = allocateOk(pool, 3000, stream); // 3072
  pool.release(big, stream);
  pool.release(medium, stream);
  CHECK(allocateOk(pool, 2900, stream) == medium); // 3072 fits better than 8192
  DevicePtr small = allocateOk(pool, 1000, stream); // 8192 > 2 * 1024: a new block
  CHECK(small != big);
  CHECK(pool.stats().deviceAllocations == 3);
  CHECK(allocateOk(pool, 5000, stream) == big); // 8192 <= 2 * 5120
}

TEST_CASE("statistics count bytes in use, cached, reserved and the peak", "[pool]") {
  FakeDevice device;
  Stream stream = *device.createStream();
  DeviceMemoryPool pool(device);
  DevicePtr a = allocateOk(pool, 3 * kMiB, stream); // 4 MiB class
  DevicePtr b = allocateOk(pool, 100, stream);      // 256
  pool.release(a, stream);
  DevicePtr c = allocateOk(pool, 300, stream); // 512
  runtime::PoolStats stats = pool.stats();
  CHECK(stats.bytesInUse == 256 + 512);
  CHECK(stats.peakBytesInUse == 4 * kMiB + 256);
  CHECK(stats.bytesCached == 4 * kMiB);
  CHECK(stats.bytesReserved == 4 * kMiB + 256 + 512);
  CHECK(stats.allocations == 3);
  CHECK(stats.cacheHits == 0);
  CHECK(stats.deviceAllocations == 3);
  CHECK(device.liveBytes() == stats.bytesReserved);
  CHECK(stats.str() == "in use 768 bytes (peak 4.0 MiB), cached 4.0 MiB, reserved 4.0 MiB; "
                       "3 allocations, 0 from the cache; 3 device allocations, 0 device frees");
  pool.release(b, stream);
  pool.release(c, stream);
  CHECK(pool.stats().bytesInUse == 0);
}

TEST_CASE("every block is 256-byte aligned and holds the bytes asked for", "[pool]") {
  FakeDevice device;
  Stream stream = *device.createStream();
  DeviceMemoryPool pool(device);
  std::vector<DevicePtr> blocks;
  for (int64_t bytes : {1, 3, 255, 257, 1023, 4097, 65537, 1048575, 1048577, 3 * 1048576 + 7}) {
    DevicePtr ptr = allocateOk(pool, bytes, stream);
    CHECK(ptr % DeviceMemoryPool::kAlignment == 0);
    // Writing the whole request would overflow (and fail under ASan) if the
    // device were asked for less.
    std::memset(reinterpret_cast<void *>(ptr), 0x5a, bytes);
    blocks.push_back(ptr);
  }
  for (DevicePtr ptr : blocks)
    pool.release(ptr, stream);
}

TEST_CASE("trim frees idle cached blocks and keeps those still in flight", "[pool]") {
  FakeDevice device;
  Stream quiet = *device.createStream();
  Stream busy = *device.createStream();
  DeviceMemoryPool pool(device);
  DevicePtr a = allocateOk(pool, 5000, quiet);
  DevicePtr b = allocateOk(pool, 7000, busy);
  DevicePtr kept = allocateOk(pool, 100, quiet);
  device.holdStream(busy);
  pool.release(a, quiet);
  pool.release(b, busy);
  pool.trim();
  runtime::PoolStats stats = pool.stats();
  CHECK(stats.deviceFrees == 1); // a; b's work has not finished
  CHECK(stats.bytesCached == 7168);
  CHECK(stats.bytesReserved == 7168 + 256);
  device.finishStream(busy);
  pool.trim();
  stats = pool.stats();
  CHECK(stats.deviceFrees == 2);
  CHECK(stats.bytesCached == 0);
  CHECK(stats.bytesReserved == 256);
  CHECK(device.liveBytes() == 256);
  pool.release(kept, quiet);
}

TEST_CASE("a block released on one stream waits for its event before another stream reuses it",
          "[pool]") {
  FakeDevice device;
  Stream producer = *device.createStream();
  Stream consumer = *device.createStream();
  DeviceMemoryPool pool(device);
  DevicePtr block = allocateOk(pool, 4096, producer);
  device.holdStream(producer); // the producer's kernels are still running
  pool.release(block, producer);
  CHECK(device.records() == 1);

  SECTION("another stream gets a fresh block while the work is in flight") {
    DevicePtr other = allocateOk(pool, 4096, consumer);
    CHECK(other != block);
    CHECK(pool.stats().deviceAllocations == 2);
    pool.release(other, consumer);
  }
  SECTION("the releasing stream reuses it at once: stream order protects it") {
    CHECK(allocateOk(pool, 4096, producer) == block);
    pool.release(block, producer);
  }
  SECTION("once the event has completed any stream reuses it") {
    device.finishStream(producer);
    CHECK(allocateOk(pool, 4096, consumer) == block);
    CHECK(pool.stats().deviceAllocations == 1);
    pool.release(block, consumer);
  }
  // The pool's destructor waits for work in flight, as a real device's would finish.
  device.finishStream(producer);
}

TEST_CASE("out of memory trims the cache and retries", "[pool]") {
  FakeDevice device;
  Stream stream = *device.createStream();
  Stream other = *device.createStream();
  device.setMemoryLimit(6 * kMiB);
  DeviceMemoryPool pool(device);
  DevicePtr a = allocateOk(pool, 2 * kMiB, stream);
  DevicePtr b = allocateOk(pool, 2 * kMiB, other);
  device.holdStream(other); // b's work still running: the retry must wait for it
  pool.release(a, stream);
  pool.release(b, other);
  std::thread finisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    device.finishStream(other);
  });
  DevicePtr big = allocateOk(pool, 5 * kMiB, stream); // 6 MiB: needs both cached blocks gone
  finisher.join();
  runtime::PoolStats stats = pool.stats();
  CHECK(stats.deviceFrees == 2);
  CHECK(stats.bytesCached == 0);
  CHECK(stats.bytesReserved == 6 * kMiB);
  CHECK(stats.bytesInUse == 6 * kMiB);
  CHECK(device.liveBytes() == 6 * kMiB);
  pool.release(big, stream);
}

TEST_CASE("an allocation that cannot fit is OutOfMemory with the pool's statistics", "[pool]") {
  FakeDevice device;
  Stream stream = *device.createStream();
  device.setMemoryLimit(4 * kMiB);
  DeviceMemoryPool pool(device);
  DevicePtr held = allocateOk(pool, 2 * kMiB, stream);
  Expected<DevicePtr> tooBig = pool.allocate(3 * kMiB, stream);
  REQUIRE_FALSE(tooBig);
  const Error &error = tooBig.error();
  CHECK(error.code() == ErrorCode::OutOfMemory);
  CHECK_THAT(error.message(), Catch::Contains("cannot allocate 4.0 MiB (4194304 bytes, asked "
                                              "3145728) on fake device"));
  CHECK_THAT(error.message(), Catch::Contains("fake device: out of memory"));
  REQUIRE(error.notes().size() == 1);
  CHECK_THAT(error.notes()[0], Catch::StartsWith("pool: in use 2.0 MiB (peak 2.0 MiB)"));
  // The failure changed nothing: the held block is intact and accounted for.
  CHECK(pool.stats().bytesInUse == 2 * kMiB);
  CHECK(pool.stats().allocations == 1);

  Expected<DevicePtr> absurd = pool.allocate(int64_t(1) << 62, stream);
  REQUIRE_FALSE(absurd);
  CHECK(absurd.error().code() == ErrorCode::OutOfMemory);
  CHECK_THAT(absurd.error().message(), Catch::Contains("4.0 EiB"));

  Expected<DevicePtr> negative = pool.allocate(-1, stream);
  REQUIRE_FALSE(negative);
  CHECK(negative.error().code() == ErrorCode::InvalidArgument);
  pool.release(held, stream);
}

TEST_CASE("the pool is safe to use from several threads at once", "[pool]") {
  FakeDevice device;
  DeviceMemoryPool pool(device);
  constexpr int kThreads = 4;
  constexpr int kIterations = 2000;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Stream stream = *device.createStream();
      std::mt19937 rng(1234 + t);
      std::uniform_int_distribution<int64_t> size(1, 20000);
      std::vector<std::pair<DevicePtr, int64_t>> held;
      for (int i = 0; i < kIterations; ++i) {
        if (held.size() < 8 && (held.empty() || rng() % 2 == 0)) {
          int64_t bytes = size(rng);
          Expected<DevicePtr> ptr = pool.allocate(bytes, stream);
          if (!ptr) {
            ++failures;
            continue;
          }
          // Stamp the block with this thread's mark: a block handed to two
          // holders at once shows up as a foreign mark below.
          std::memset(reinterpret_cast<void *>(*ptr), t + 1, bytes);
          held.emplace_back(*ptr, bytes);
        } else {
          auto [ptr, bytes] = held.back();
          held.pop_back();
          auto *data = reinterpret_cast<const unsigned char *>(ptr);
          if (data[0] != t + 1 || data[bytes - 1] != t + 1)
            ++failures;
          pool.release(ptr, stream);
        }
      }
      for (auto [ptr, bytes] : held)
        pool.release(ptr, stream);
    });
  for (std::thread &thread : threads)
    thread.join();
  CHECK(failures == 0);
  runtime::PoolStats stats = pool.stats();
  CHECK(stats.bytesInUse == 0);
  CHECK(stats.cacheHits > 0);
  CHECK(stats.bytesReserved == stats.bytesCached);
  CHECK(device.liveBytes() == stats.bytesReserved);
}
