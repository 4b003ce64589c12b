// N ranks of a data-parallel run as N threads of one process: a host
// communicator whose collectives meet in shared memory, and a runner that
// gives each rank its thread. Sums run in rank order, so results are
// deterministic; a collective whose peers do not all come within the timeout,
// or that the ranks call differently, fails on every rank that is in it.
#pragma once

#include "runtime/dist/Communicator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kiln::test {

class ThreadedRanks : public std::enable_shared_from_this<ThreadedRanks> {
public:
  /// One collective as a rank called it.
  struct Call {
    std::string collective; ///< "allReduce", "broadcast", "barrier"
    int64_t count = 0;
    DType dtype = DType::F32;
    runtime::dist::ReduceOp op = runtime::dist::ReduceOp::Sum;
    int root = 0;
    bool operator==(const Call &) const = default;
    std::string str() const {
      return fmt::format("{} ({} {})", collective, count, dtypeName(dtype));
    }
  };

  /// `space` Device only for tests of its refusal: the collectives always
  /// touch the buffers as host memory.
  static std::shared_ptr<ThreadedRanks>
  create(int size, std::chrono::milliseconds timeout = std::chrono::seconds(30),
         runtime::dist::MemorySpace space = runtime::dist::MemorySpace::Host) {
    return std::shared_ptr<ThreadedRanks>(new ThreadedRanks(size, timeout, space));
  }

  int size() const { return size_; }
  runtime::dist::MemorySpace memorySpace() const { return space_; }
  std::shared_ptr<runtime::dist::Communicator> communicator(int rank);

  /// Every collective `rank` has joined, in order.
  std::vector<Call> calls(int rank) {
    std::lock_guard lock(mutex_);
    return history_[static_cast<size_t>(rank)];
  }

  /// Runs `body(rank, communicator)` on every rank, each in its own thread, and
  /// returns the results by rank. A rank whose result is an error aborts the
  /// group, so that the others stop waiting for it. `body` must not use
  /// Catch's assertions (they are not thread-safe): return what to check.
  template <typename Body> auto run(Body body) {
    using Result = decltype(body(0, communicator(0)));
    std::vector<std::optional<Result>> results(static_cast<size_t>(size_));
    std::vector<std::thread> threads;
    for (int rank = 0; rank < size_; ++rank)
      threads.emplace_back([&, rank] {
        Result result = body(rank, communicator(rank));
        if (!result)
          abort();
        results[static_cast<size_t>(rank)].emplace(std::move(result));
      });
    for (std::thread &thread : threads)
      thread.join();
    std::vector<Result> out;
    for (auto &result : results)
      out.push_back(std::move(*result));
    return out;
  }

  /// Fails every waiting and later collective.
  void abort() {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    changed_.notify_all();
  }

  /// Joins collective `call` with `data`: returns once every rank has joined
  /// and the last one has combined the buffers (every rank's, in place).
  Expected<void> join(int rank, const Call &call, void *data) {
    std::unique_lock lock(mutex_);
    history_[static_cast<size_t>(rank)].push_back(call);
    if (aborted_)
      return failure(rank, call, "the group was aborted");
    uint64_t generation = generation_;
    pending_[static_cast<size_t>(rank)] = {call, data};
    if (++arrived_ == size_) {
      complete();
      return outcome_;
    }
    bool done = changed_.wait_for(lock, timeout_,
                                  [&] { return generation_ != generation || aborted_; });
    if (generation_ != generation)
      return outcome_;
    aborted_ = true; // the group cannot recover from a rank that never came
    changed_.notify_all();
    std::vector<int> missing;
    for (int r = 0; r < size_; ++r)
      if (!pending_[static_cast<size_t>(r)])
        missing.push_back(r);
    return failure(rank, call,
                   done ? std::string("the group was aborted")
                        : fmt::format("timed out: rank{} {} did not arrive",
                                      missing.size() > 1 ? "s" : "", fmt::join(missing, ", ")));
  }

private:
  struct Pending {
    Call call;
    void *data = nullptr;
  };

  ThreadedRanks(int size, std::chrono::milliseconds timeout, runtime::dist::MemorySpace space)
      : size_(size), timeout_(timeout), space_(space), pending_(static_cast<size_t>(size)),
        history_(static_cast<size_t>(size)) {}

  std::unexpected<Error> failure(int rank, const Call &call, const std::string &why) const {
    return makeError(ErrorCode::Unavailable, fmt::format("{} on rank {} of {} (threaded test "
                                                         "ranks): {}",
                                                         call.str(), rank, size_, why));
  }

  template <typename T> void sumInto(const Call &call) {
    std::vector<T> total(static_cast<size_t>(call.count), T{});
    for (const std::optional<Pending> &p : pending_)
      for (int64_t i = 0; i < call.count; ++i)
        total[static_cast<size_t>(i)] += static_cast<const T *>(p->data)[i];
    if (call.op == runtime::dist::ReduceOp::Mean)
      for (T &value : total)
        value /= static_cast<T>(size_);
    for (const std::optional<Pending> &p : pending_)
      std::memcpy(p->data, total.data(), total.size() * sizeof(T));
  }

  /// The last rank to arrive: check the calls agree, combine, wake the others.
  void complete() {
    const Call &call = pending_[0]->call;
    outcome_ = {};
    for (int r = 1; r < size_; ++r)
      if (!(pending_[static_cast<size_t>(r)]->call == call))
        outcome_ = failure(0, call, fmt::format("rank {} called {} instead", r,
                                                pending_[static_cast<size_t>(r)]->call.str()));
    if (outcome_ && call.collective == "allReduce") {
      switch (call.dtype) {
      case DType::F32: sumInto<float>(call); break;
      case DType::F64: sumInto<double>(call); break;
      case DType::I64: sumInto<int64_t>(call); break;
      default: outcome_ = failure(0, call, "the test ranks reduce f32, f64 and i64 only");
      }
    }
    if (outcome_ && call.collective == "broadcast") {
      size_t bytes = static_cast<size_t>(call.count) * static_cast<size_t>(dtypeByteSize(call.dtype));
      for (int r = 0; r < size_; ++r)
        if (r != call.root)
          std::memcpy(pending_[static_cast<size_t>(r)]->data,
                      pending_[static_cast<size_t>(call.root)]->data, bytes);
    }
    for (std::optional<Pending> &p : pending_)
      p.reset();
    arrived_ = 0;
    ++generation_;
    changed_.notify_all();
  }

  int size_;
  std::chrono::milliseconds timeout_;
  runtime::dist::MemorySpace space_;
  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t generation_ = 0;
  int arrived_ = 0;
  bool aborted_ = false;
  std::vector<std::optional<Pending>> pending_;
  Expected<void> outcome_; ///< of the last completed collective
  std::vector<std::vector<Call>> history_;
};

/// One rank's handle on a ThreadedRanks group.
class ThreadedCommunicator final : public runtime::dist::Communicator {
public:
  ThreadedCommunicator(std::shared_ptr<ThreadedRanks> group, int rank)
      : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  runtime::dist::MemorySpace memorySpace() const override { return group_->memorySpace(); }
  std::string_view backendName() const override { return "threaded test ranks"; }
  Expected<void> allReduce(void *data, int64_t count, DType dtype, runtime::dist::ReduceOp op,
                           runtime::Stream) override {
    KILN_TRY_VOID(runtime::dist::checkCollectiveArguments(*this, "allReduce", data, count, dtype,
                                                          op));
    return group_->join(rank_, {"allReduce", count, dtype, op, 0}, data);
  }
  Expected<void> broadcast(void *data, int64_t count, DType dtype, int root,
                           runtime::Stream) override {
    KILN_TRY_VOID(runtime::dist::checkCollectiveArguments(
        *this, "broadcast", data, count, dtype, runtime::dist::ReduceOp::Sum, root));
    return group_->join(rank_, {"broadcast", count, dtype, runtime::dist::ReduceOp::Sum, root},
                        data);
  }
  Expected<void> barrier() override {
    return group_->join(rank_, {"barrier", 0, DType::I64, runtime::dist::ReduceOp::Sum, 0},
                        nullptr);
  }
  void abort() override { group_->abort(); }
  bool aborted() const override { return false; }

private:
  std::shared_ptr<ThreadedRanks> group_;
  int rank_;
};

inline std::shared_ptr<runtime::dist::Communicator> ThreadedRanks::communicator(int rank) {
  return std::make_shared<ThreadedCommunicator>(shared_from_this(), rank);
}

} // namespace kiln::test
