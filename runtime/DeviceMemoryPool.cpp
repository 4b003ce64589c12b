// The caching, stream-ordered device memory pool: size classes, a best-fit
// cache of released blocks guarded by events, trimming and the OOM retry.
#include "runtime/DeviceMemoryPool.h"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace kiln::runtime {
namespace {

/// Larger requests are refused outright: rounding them would overflow, and no device has it.
constexpr int64_t kLargestRequest = int64_t(1) << 60;

int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

} // namespace

std::string PoolStats::str() const {
  return fmt::format("in use {} (peak {}), cached {}, reserved {}; {} allocations, {} from the "
                     "cache; {} device allocations, {} device frees",
                     shortByteSizeText(bytesInUse), shortByteSizeText(peakBytesInUse),
                     shortByteSizeText(bytesCached), shortByteSizeText(bytesReserved), allocations,
                     cacheHits, deviceAllocations, deviceFrees);
}

int64_t DeviceMemoryPool::roundedSize(int64_t bytes) {
  if (bytes < kLargeBlockBytes)
    return roundUp(std::max<int64_t>(bytes, 1), kAlignment);
  return roundUp(bytes, kLargeRounding);
}

/// A released block waiting for reuse. Its event was recorded on `stream` at
/// release; a null event means the block's work is known to be finished.
struct CachedBlock {
  DevicePtr ptr = 0;
  void *stream = nullptr;
  Event event;
};

struct DeviceMemoryPool::State {
  mutable std::mutex mutex;
  std::multimap<int64_t, CachedBlock> cache;      ///< by size, for best fit
  std::unordered_map<DevicePtr, int64_t> inUse;   ///< block -> size
  std::vector<Event> idleEvents;                  ///< recorded-and-reused events, kept for reuse
  PoolStats stats;
};

DeviceMemoryPool::DeviceMemoryPool(Device &device)
    : device_(device), state_(std::make_unique<State>()) {}

namespace {

/// Whether the block's work has finished; an error (a faulted device) counts as
/// not finished, so a block is never reused on a guess.
bool blockIdle(Device &device, const CachedBlock &block) {
  if (!block.event.handle)
    return true;
  Expected<bool> done = device.eventDone(block.event);
  return done && *done;
}

/// Blocks until the block's work has finished (or the device reports an error,
/// after which it will never finish).
void waitUntilIdle(Device &device, const CachedBlock &block) {
  while (block.event.handle) {
    Expected<bool> done = device.eventDone(block.event);
    if (!done || *done)
      return;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

} // namespace

DeviceMemoryPool::~DeviceMemoryPool() {
  std::lock_guard lock(state_->mutex);
  for (auto &[size, block] : state_->cache) {
    waitUntilIdle(device_, block);
    device_.free(block.ptr);
    if (block.event.handle)
      device_.destroyEvent(block.event);
  }
  for (Event event : state_->idleEvents)
    device_.destroyEvent(event);
  // Blocks still in use belong to their holders, who must release them before
  // the pool goes; they are not freed behind their backs.
}

Expected<DevicePtr> DeviceMemoryPool::allocate(int64_t bytes, Stream stream) {
  if (bytes < 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("memory pool: negative allocation size {}", bytes));
  State &state = *state_;
  std::lock_guard lock(state.mutex);
  if (bytes > kLargestRequest)
    return std::unexpected(
        Error(ErrorCode::OutOfMemory,
              fmt::format("memory pool: cannot allocate {} ({} bytes) on {}: no device has that "
                          "much memory",
                          shortByteSizeText(bytes), bytes, device_.describe()))
            .withNote("pool: " + state.stats.str()));
  int64_t size = roundedSize(bytes);

  auto hand = [&](DevicePtr ptr, bool fromCache) -> DevicePtr {
    state.inUse.emplace(ptr, size);
    state.stats.allocations += 1;
    state.stats.cacheHits += fromCache ? 1 : 0;
    state.stats.bytesInUse += size;
    state.stats.peakBytesInUse = std::max(state.stats.peakBytesInUse, state.stats.bytesInUse);
    return ptr;
  };
  auto reuse = [&](std::multimap<int64_t, CachedBlock>::iterator it) -> DevicePtr {
    CachedBlock block = it->second;
    size = it->first;
    state.cache.erase(it);
    state.stats.bytesCached -= size;
    if (block.event.handle)
      state.idleEvents.push_back(block.event);
    return hand(block.ptr, true);
  };

  // Best fit, first among blocks released on this stream (usable at once: the
  // stream orders their old work before the new), then among blocks of other
  // streams whose work has finished. A block more than twice the class stays
  // for a request that fits it better.
  auto first = state.cache.lower_bound(size);
  auto last = state.cache.upper_bound(2 * size);
  for (auto it = first; it != last; ++it)
    if (it->second.stream == stream.handle)
      return reuse(it);
  for (auto it = first; it != last; ++it)
    if (blockIdle(device_, it->second))
      return reuse(it);

  Expected<DevicePtr> fresh = device_.allocate(size);
  if (!fresh && fresh.error().code() == ErrorCode::OutOfMemory && !state.cache.empty()) {
    // Give every cached block back (waiting for the ones still in flight) and retry.
    for (auto &[cachedSize, block] : state.cache) {
      waitUntilIdle(device_, block);
      device_.free(block.ptr);
      if (block.event.handle)
        state.idleEvents.push_back(block.event);
      state.stats.deviceFrees += 1;
      state.stats.bytesReserved -= cachedSize;
    }
    state.cache.clear();
    state.stats.bytesCached = 0;
    fresh = device_.allocate(size);
  }
  if (!fresh) {
    if (fresh.error().code() != ErrorCode::OutOfMemory)
      return std::unexpected(std::move(fresh).error());
    Error error(ErrorCode::OutOfMemory,
                fmt::format("memory pool: cannot allocate {} ({} bytes, asked {}) on {}: {}",
                            shortByteSizeText(size), size, bytes, device_.describe(),
                            fresh.error().message()));
    for (const std::string &note : fresh.error().notes())
      error.withNote(note);
    error.withNote("pool: " + state.stats.str());
    return std::unexpected(std::move(error));
  }
  KILN_CHECK(*fresh % kAlignment == 0,
             fmt::format("{} returned a block at {:#x}, not {}-byte aligned", device_.describe(),
                         *fresh, kAlignment));
  state.stats.deviceAllocations += 1;
  state.stats.bytesReserved += size;
  return hand(*fresh, false);
}

void DeviceMemoryPool::release(DevicePtr ptr, Stream stream) {
  State &state = *state_;
  std::lock_guard lock(state.mutex);
  auto found = state.inUse.find(ptr);
  KILN_CHECK(found != state.inUse.end(),
             fmt::format("memory pool: release of {:#x}, which the pool did not hand out (or "
                         "which was released twice)",
                         ptr));
  int64_t size = found->second;
  state.inUse.erase(found);

  CachedBlock block{ptr, stream.handle, {}};
  if (!state.idleEvents.empty()) {
    block.event = state.idleEvents.back();
    state.idleEvents.pop_back();
  } else if (Expected<Event> created = device_.createEvent()) {
    block.event = *created;
  }
  if (!block.event.handle || !device_.record(block.event, stream)) {
    // Without an event the stream's position cannot be marked: wait for it now,
    // so the block is safe on every stream.
    if (block.event.handle)
      state.idleEvents.push_back(block.event);
    block.event = {};
    (void)device_.synchronize(stream);
  }
  state.cache.emplace(size, block);
  state.stats.bytesInUse -= size;
  state.stats.bytesCached += size;
}

void DeviceMemoryPool::trim() {
  State &state = *state_;
  std::lock_guard lock(state.mutex);
  for (auto it = state.cache.begin(); it != state.cache.end();) {
    if (!blockIdle(device_, it->second)) {
      ++it;
      continue;
    }
    device_.free(it->second.ptr);
    if (it->second.event.handle)
      device_.destroyEvent(it->second.event);
    state.stats.deviceFrees += 1;
    state.stats.bytesReserved -= it->first;
    state.stats.bytesCached -= it->first;
    it = state.cache.erase(it);
  }
  for (Event event : state.idleEvents)
    device_.destroyEvent(event);
  state.idleEvents.clear();
}

PoolStats DeviceMemoryPool::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

} // namespace kiln::runtime
