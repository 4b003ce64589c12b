// The CPU thread pool that parallel loops of host kernels run on (through
// kiln_cpu_parallel_for, codegen/HostKernelAbi.h, defined in ThreadPool.cpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::cpu {

/// A fixed set of worker threads that run the chunks of parallelFor calls.
///
/// The calling thread works on its own call's chunks too, so a pool of N
/// threads has N - 1 workers, and a pool of 1 runs everything inline. Several
/// threads may call parallelFor at once: each call is a job in a queue, and
/// idle workers help whichever job still has chunks. A parallelFor from inside
/// a chunk (a nested parallel loop) runs inline on the calling thread, which
/// keeps a worker from waiting on work only it could run.
class ThreadPool {
public:
  /// A pool of `numThreads` threads in all (the caller included); at least 1.
  explicit ThreadPool(int numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// The process-wide pool: KILN_NUM_THREADS threads when that variable holds
  /// a positive integer, else one per hardware thread. Created on first use.
  static ThreadPool &global();

  /// The size the global pool has (or will have): reads KILN_NUM_THREADS.
  static int defaultThreadCount();

  int numThreads() const { return static_cast<int>(workers_.size()) + 1; }

  /// Calls fn(begin, end) on disjoint chunks that cover [0, n) exactly once,
  /// and returns when all have finished. n <= 0 does nothing. If fn throws,
  /// the remaining chunks still run and the first exception is rethrown here.
  void parallelFor(int64_t n, const std::function<void(int64_t, int64_t)> &fn);

private:
  struct Job;
  void workerLoop();
  /// Runs chunks of `job` until none is left to claim.
  static void runChunks(Job &job);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_; ///< jobs that may still have chunks to claim
  /// Counts pushes, so a polling worker sees a new job without taking the mutex.
  std::atomic<uint64_t> jobsPushed_{0};
  bool stopping_ = false;
};

} // namespace kiln::cpu
