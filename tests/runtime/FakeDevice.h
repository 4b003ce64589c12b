// A Device in host memory for testing what sits on the Device interface (the
// memory pool): counts allocations, fails with OutOfMemory past a byte limit,
// and lets a test hold a stream's work "in flight" to observe event ordering.
#pragma once

#include "runtime/Device.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

namespace kiln::runtime::testing {

class FakeDevice final : public Device {
public:
  ~FakeDevice() override {
    for (auto &[ptr, bytes] : live_)
      std::free(reinterpret_cast<void *>(ptr));
  }

  /// allocate() fails with OutOfMemory once live bytes would exceed `bytes` (-1: never).
  void setMemoryLimit(int64_t bytes) {
    std::lock_guard lock(mutex_);
    limit_ = bytes;
  }
  /// While held, events recorded on `stream` stay pending (its work "runs").
  void holdStream(Stream stream) {
    std::lock_guard lock(mutex_);
    held_.insert(stream.handle);
  }
  /// The held stream's work finishes: its pending events complete.
  void finishStream(Stream stream) {
    std::lock_guard lock(mutex_);
    held_.erase(stream.handle);
    for (auto &[event, state] : events_)
      if (state.stream == stream.handle)
        state.done = true;
  }

  int64_t liveBytes() const { std::lock_guard lock(mutex_); return liveBytes_; }
  int64_t allocateCalls() const { std::lock_guard lock(mutex_); return allocateCalls_; }
  int64_t freeCalls() const { std::lock_guard lock(mutex_); return freeCalls_; }
  int64_t badFrees() const { std::lock_guard lock(mutex_); return badFrees_; }
  int64_t liveEvents() const { std::lock_guard lock(mutex_); return static_cast<int64_t>(events_.size()); }
  int64_t records() const { std::lock_guard lock(mutex_); return records_; }

  std::string describe() const override { return "fake device"; }
  DevicePeak peak() const override { return {}; }

  Expected<DevicePtr> allocate(int64_t bytes) override {
    std::lock_guard lock(mutex_);
    ++allocateCalls_;
    if (limit_ >= 0 && liveBytes_ + bytes > limit_)
      return makeError(ErrorCode::OutOfMemory,
                       fmt::format("fake device: out of memory for {} bytes ({} of {} in use)",
                                   bytes, liveBytes_, limit_));
    size_t rounded = (static_cast<size_t>(bytes) + 255) / 256 * 256;
    void *ptr = std::aligned_alloc(256, rounded);
    live_[reinterpret_cast<DevicePtr>(ptr)] = bytes;
    liveBytes_ += bytes;
    return reinterpret_cast<DevicePtr>(ptr);
  }
  void free(DevicePtr ptr) override {
    std::lock_guard lock(mutex_);
    ++freeCalls_;
    auto found = live_.find(ptr);
    if (found == live_.end()) {
      ++badFrees_;
      return;
    }
    liveBytes_ -= found->second;
    live_.erase(found);
    std::free(reinterpret_cast<void *>(ptr));
  }
  Expected<void *> allocatePinned(int64_t bytes) override { return std::malloc(bytes); }
  void freePinned(void *ptr) override { std::free(ptr); }

  Expected<Stream> createStream() override {
    std::lock_guard lock(mutex_);
    return Stream{reinterpret_cast<void *>(++nextHandle_)};
  }
  void destroyStream(Stream) override {}
  Expected<void> synchronize(Stream stream) override {
    finishStream(stream);
    return {};
  }

  Expected<void> copyToDevice(DevicePtr dst, const void *src, int64_t bytes, Stream) override {
    std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
    return {};
  }
  Expected<void> copyToHost(void *dst, DevicePtr src, int64_t bytes, Stream) override {
    std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
    return {};
  }
  Expected<void> copyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes, Stream) override {
    std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), bytes);
    return {};
  }
  Expected<void> fill(DevicePtr dst, uint8_t value, int64_t bytes, Stream) override {
    std::memset(reinterpret_cast<void *>(dst), value, bytes);
    return {};
  }

  Expected<Event> createEvent() override {
    std::lock_guard lock(mutex_);
    void *handle = reinterpret_cast<void *>(++nextHandle_);
    events_[handle] = {};
    return Event{handle};
  }
  void destroyEvent(Event event) override {
    std::lock_guard lock(mutex_);
    events_.erase(event.handle);
  }
  Expected<void> record(Event event, Stream stream) override {
    std::lock_guard lock(mutex_);
    ++records_;
    EventState &state = events_.at(event.handle);
    state.stream = stream.handle;
    state.done = !held_.contains(stream.handle);
    return {};
  }
  Expected<void> waitEvent(Stream, Event) override { return {}; }
  Expected<bool> eventDone(Event event) override {
    std::lock_guard lock(mutex_);
    return events_.at(event.handle).done;
  }
  Expected<double> elapsedMs(Event, Event) override { return 0.0; }

  Expected<void> beginCapture(Stream) override {
    return makeError(ErrorCode::Unsupported, "fake device: no launch graphs");
  }
  Expected<GraphExec> endCapture(Stream) override {
    return makeError(ErrorCode::Unsupported, "fake device: no launch graphs");
  }
  Expected<void> launchGraph(GraphExec, Stream) override {
    return makeError(ErrorCode::Unsupported, "fake device: no launch graphs");
  }
  void destroyGraph(GraphExec) override {}

private:
  struct EventState {
    void *stream = nullptr;
    bool done = true; ///< an event never recorded is complete, as in CUDA
  };
  mutable std::mutex mutex_;
  std::map<DevicePtr, int64_t> live_;
  std::map<void *, EventState> events_;
  std::set<void *> held_;
  int64_t limit_ = -1;
  int64_t liveBytes_ = 0;
  int64_t allocateCalls_ = 0, freeCalls_ = 0, badFrees_ = 0, records_ = 0;
  uintptr_t nextHandle_ = 0;
};

} // namespace kiln::runtime::testing
