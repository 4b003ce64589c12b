// Prefetcher: prepares the next batches on a background thread while the
// current one is used, through a bounded queue, with errors and exceptions
// handed to the consumer as Expected errors and a clean shutdown.
#pragma once

#include "frontend/data/DataLoader.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace kiln::data {

class Prefetcher {
public:
  /// Makes item `index`; called on the background thread, in index order.
  using Producer = std::function<Expected<NamedTensors>(int64_t index)>;

  /// Starts a thread that produces items 0..count-1 in order, keeping at most
  /// `depth` finished items waiting. InvalidArgument for a negative count or
  /// a depth below 1; Unavailable when the thread cannot be started.
  static Expected<std::unique_ptr<Prefetcher>> start(int64_t count, Producer produce,
                                                     int64_t depth = 2);
  /// The batches of one epoch, in the epoch's order.
  static Expected<std::unique_ptr<Prefetcher>> start(EpochBatches epoch, int64_t depth = 2);

  /// Stops the thread (a producer call under way finishes first) and drops
  /// the items not taken.
  ~Prefetcher();
  Prefetcher(const Prefetcher &) = delete;
  Prefetcher &operator=(const Prefetcher &) = delete;

  /// The next item, waiting for it if needed; nullopt after the last. When
  /// producing item k failed (an error, or an exception, which becomes an
  /// error naming it), items before k come out first, then that error, on
  /// this call and every later one: nothing after k is produced.
  Expected<std::optional<NamedTensors>> next();

  /// Items taken by next() so far.
  int64_t taken() const { return taken_; }

private:
  Prefetcher(int64_t count, Producer produce, int64_t depth);
  void run();

  const int64_t count_;
  const Producer produce_;
  const size_t depth_;
  int64_t taken_ = 0;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<NamedTensors> ready_;
  std::optional<Error> failure_; ///< set when the producer failed; ends production
  bool stopping_ = false;
  std::thread worker_; ///< last, so it starts after everything it uses exists
};

} // namespace kiln::data
