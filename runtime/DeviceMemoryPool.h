// A caching, stream-ordered pool of device memory on top of a Device's raw
// allocations: freed blocks are kept and reused, so steady-state runs make no
// driver allocation calls, and an out-of-memory error carries the statistics.
#pragma once

#include "runtime/Device.h"
#include "support/Error.h"
#include "support/MemorySize.h"

#include <cstdint>
#include <memory>
#include <string>

namespace kiln::runtime {

/// Counters of a pool, for `kiln run --profile`, errors and tests.
struct PoolStats {
  int64_t bytesInUse = 0;      ///< handed out and not yet released
  int64_t bytesCached = 0;     ///< released, kept for reuse
  int64_t peakBytesInUse = 0;  ///< the most ever in use at once
  int64_t bytesReserved = 0;   ///< in use + cached: what the device has given the pool
  int64_t allocations = 0;     ///< allocate() calls that succeeded
  int64_t cacheHits = 0;       ///< of those, served from the cache
  int64_t deviceAllocations = 0; ///< raw Device::allocate calls
  int64_t deviceFrees = 0;       ///< raw Device::free calls (trims, retries after OOM)

  /// One line: "in use 12.0 MiB (peak 20.0 MiB), cached 8.0 MiB, ...".
  std::string str() const;
};

/// Size classes: requests below 1 MiB round up to 256 bytes, larger ones to
/// 2 MiB, and a request reuses the smallest cached block of at least its class
/// and at most twice it. Blocks are never split or merged.
class DeviceMemoryPool {
public:
  static constexpr int64_t kAlignment = 256;            ///< every block's address and small rounding
  static constexpr int64_t kLargeBlockBytes = 1 << 20;  ///< from here on, round to kLargeRounding
  static constexpr int64_t kLargeRounding = 2 << 20;
  /// The size class of a request of `bytes` (at least kAlignment).
  static int64_t roundedSize(int64_t bytes);

  explicit DeviceMemoryPool(Device &device);
  ~DeviceMemoryPool(); ///< returns every cached block to the device
  DeviceMemoryPool(const DeviceMemoryPool &) = delete;
  DeviceMemoryPool &operator=(const DeviceMemoryPool &) = delete;

  /// A block of at least `bytes` (256-byte aligned) for use on `stream`. When
  /// the device is out of memory the cache is trimmed and the allocation
  /// retried; if it still fails the error is OutOfMemory with stats() as a note.
  Expected<DevicePtr> allocate(int64_t bytes, Stream stream);
  /// Returns a block: reusable at once on `stream`, on other streams only after
  /// the work enqueued on `stream` so far has finished.
  void release(DevicePtr ptr, Stream stream);
  /// Frees every cached block that no stream still uses.
  void trim();
  PoolStats stats() const;

  Device &device() const { return device_; }

private:
  struct State;
  Device &device_;
  std::unique_ptr<State> state_;
};

} // namespace kiln::runtime
