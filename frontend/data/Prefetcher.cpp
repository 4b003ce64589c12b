// The prefetcher's worker loop and its hand-over to the consumer.
#include "frontend/data/Prefetcher.h"

#include <exception>
#include <fmt/format.h>
#include <new>
#include <system_error>

namespace kiln::data {

Expected<std::unique_ptr<Prefetcher>> Prefetcher::start(int64_t count, Producer produce,
                                                        int64_t depth) {
  if (count < 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("prefetcher: item count {} is negative", count));
  if (depth < 1)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("prefetcher: queue depth {} must be at least 1", depth));
  if (!produce)
    return makeError(ErrorCode::InvalidArgument, "prefetcher: no producer function");
  try {
    return std::unique_ptr<Prefetcher>(new Prefetcher(count, std::move(produce), depth));
  } catch (const std::system_error &error) {
    return makeError(ErrorCode::Unavailable,
                     fmt::format("prefetcher: cannot start its thread: {}", error.what()));
  }
}

Expected<std::unique_ptr<Prefetcher>> Prefetcher::start(EpochBatches epoch, int64_t depth) {
  int64_t count = epoch.size();
  return start(
      count, [epoch = std::move(epoch)](int64_t index) { return epoch.batch(index); }, depth);
}

Prefetcher::Prefetcher(int64_t count, Producer produce, int64_t depth)
    : count_(count), produce_(std::move(produce)), depth_(static_cast<size_t>(depth)),
      worker_([this] { run(); }) {}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void Prefetcher::run() {
  for (int64_t index = 0; index < count_; ++index) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || ready_.size() < depth_; });
      if (stopping_)
        return;
    }
    // Produced outside the lock, so the consumer takes ready items meanwhile.
    std::optional<Expected<NamedTensors>> item;
    try {
      item.emplace(produce_(index));
    } catch (const std::bad_alloc &) {
      item.emplace(makeError(ErrorCode::OutOfMemory,
                             fmt::format("prefetcher: out of memory producing item {}", index)));
    } catch (const std::exception &exception) {
      item.emplace(makeError(ErrorCode::InvalidArgument,
                             fmt::format("prefetcher: producing item {} threw: {}", index,
                                         exception.what())));
    } catch (...) {
      item.emplace(makeError(ErrorCode::InvalidArgument,
                             fmt::format("prefetcher: producing item {} threw a non-standard "
                                         "exception",
                                         index)));
    }
    {
      std::lock_guard lock(mutex_);
      if (*item) {
        ready_.push_back(std::move(**item));
      } else {
        failure_ = std::move(*item).error();
        failure_->withNote(fmt::format("while prefetching item {} of {}", index, count_));
      }
    }
    changed_.notify_all();
    if (!*item)
      return;
  }
}

Expected<std::optional<NamedTensors>> Prefetcher::next() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] {
    return !ready_.empty() || failure_ || taken_ + static_cast<int64_t>(ready_.size()) >= count_;
  });
  if (!ready_.empty()) {
    NamedTensors item = std::move(ready_.front());
    ready_.pop_front();
    ++taken_;
    lock.unlock();
    changed_.notify_all();
    return item;
  }
  if (failure_)
    return std::unexpected(*failure_);
  return std::nullopt;
}

} // namespace kiln::data
