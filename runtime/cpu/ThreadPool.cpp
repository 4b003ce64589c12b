// The CPU thread pool: a queue of parallelFor jobs, each split into chunks
// that workers and the calling thread claim with one atomic counter.
#include "runtime/cpu/ThreadPool.h"

#include "codegen/HostKernelAbi.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include <sched.h>

namespace kiln::cpu {
namespace {

/// Set while this thread runs a chunk: a parallelFor from inside a chunk runs
/// inline, so a worker never blocks waiting for chunks only it could run.
thread_local bool tlsInsideChunk = false;

/// More chunks than threads, so uneven chunks and threads busy with another
/// caller's job still balance out.
constexpr int64_t kChunksPerThread = 4;

constexpr int kMaxThreads = 4096;

/// How long a thread that ran out of work polls before it sleeps. Waking a
/// sleeping thread costs tens to hundreds of microseconds (more on a VM whose
/// idle vCPU halts), as long as a whole small kernel: a worker that slept
/// through a two-chunk job left the caller to run both. A model runs its
/// parallel loops back to back, so a short poll catches the next one awake.
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(200);

/// Polls `ready` until it holds or kSpinBeforeSleep has passed; says which.
template <typename Ready> bool spinUntil(Ready ready) {
  auto deadline = std::chrono::steady_clock::now() + kSpinBeforeSleep;
  for (int polls = 0;; ++polls) {
    if (ready())
      return true;
    if ((polls & 63) == 63 && std::chrono::steady_clock::now() >= deadline)
      return false;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

int hardwareThreadCount() {
  // The affinity mask, not the machine's core count: a container or taskset may
  // give this process fewer CPUs.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int count = CPU_COUNT(&set);
    if (count > 0)
      return count;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

} // namespace

struct ThreadPool::Job {
  const std::function<void(int64_t, int64_t)> *fn = nullptr;
  int64_t n = 0;
  int64_t chunkSize = 1;
  int64_t numChunks = 0;
  std::atomic<int64_t> nextChunk{0};
  std::atomic<int64_t> doneChunks{0};
  std::mutex mutex; ///< guards `error` and the wait for completion
  std::condition_variable finished;
  std::exception_ptr error;
};

ThreadPool::ThreadPool(int numThreads) {
  int workers = std::clamp(numThreads, 1, kMaxThreads) - 1;
  workers_.reserve(workers);
  for (int i = 0; i < workers; ++i)
    workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto &worker : workers_)
    worker.join();
}

int ThreadPool::defaultThreadCount() {
  if (const char *env = std::getenv("KILN_NUM_THREADS"); env && *env) {
    char *end = nullptr;
    long value = std::strtol(env, &end, 10);
    if (*end == '\0' && value >= 1 && value <= kMaxThreads)
      return static_cast<int>(value);
    std::fprintf(stderr, "kiln: ignoring KILN_NUM_THREADS='%s' (expected an integer in [1, %d])\n",
                 env, kMaxThreads);
  }
  return hardwareThreadCount();
}

ThreadPool &ThreadPool::global() {
  // Never destroyed: a thread still running kernels while the process exits
  // must not find the pool's mutex and workers torn down under it.
  static ThreadPool *pool = new ThreadPool(defaultThreadCount());
  return *pool;
}

void ThreadPool::runChunks(Job &job) {
  bool wasInside = tlsInsideChunk;
  tlsInsideChunk = true;
  for (;;) {
    int64_t chunk = job.nextChunk.fetch_add(1, std::memory_order_relaxed);
    if (chunk >= job.numChunks)
      break;
    int64_t begin = chunk * job.chunkSize;
    int64_t end = std::min(job.n, begin + job.chunkSize);
    try {
      (*job.fn)(begin, end);
    } catch (...) {
      std::lock_guard lock(job.mutex);
      if (!job.error)
        job.error = std::current_exception();
    }
    // acq_rel: the caller that sees the final count also sees every chunk's writes.
    if (job.doneChunks.fetch_add(1, std::memory_order_acq_rel) + 1 == job.numChunks) {
      std::lock_guard lock(job.mutex);
      job.finished.notify_all();
    }
  }
  tlsInsideChunk = wasInside;
}

void ThreadPool::workerLoop() {
  for (;;) {
    // Read before looking at the queue: a job pushed after the look changes it.
    uint64_t pushesSeen = jobsPushed_.load(std::memory_order_acquire);
    std::shared_ptr<Job> job;
    {
      std::lock_guard lock(mutex_);
      if (queue_.empty() && stopping_)
        return; // no job left to help with
      if (!queue_.empty()) {
        job = queue_.front();
        if (job->nextChunk.load(std::memory_order_relaxed) >= job->numChunks) {
          queue_.pop_front(); // every chunk is claimed: nothing left to help with
          continue;
        }
      }
    }
    if (job) {
      runChunks(*job);
      continue;
    }
    if (spinUntil([&] { return jobsPushed_.load(std::memory_order_acquire) != pushesSeen; }))
      continue;
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
  }
}

void ThreadPool::parallelFor(int64_t n, const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0)
    return;
  if (workers_.empty() || n == 1 || tlsInsideChunk) {
    fn(0, n);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  int64_t wanted = std::min<int64_t>(n, numThreads() * kChunksPerThread);
  job->chunkSize = (n + wanted - 1) / wanted;
  job->numChunks = (n + job->chunkSize - 1) / job->chunkSize;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(job);
    jobsPushed_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();

  runChunks(*job);
  spinUntil([&] { return job->doneChunks.load(std::memory_order_acquire) == job->numChunks; });
  {
    std::unique_lock lock(job->mutex);
    job->finished.wait(
        lock, [&] { return job->doneChunks.load(std::memory_order_acquire) == job->numChunks; });
  }
  {
    // Workers drop exhausted jobs lazily; dropping ours now keeps the queue short.
    std::lock_guard lock(mutex_);
    std::erase(queue_, job);
  }
  if (job->error)
    std::rethrow_exception(job->error);
}

} // namespace kiln::cpu

extern "C" void kiln_cpu_parallel_for(void (*body)(void *closure, int64_t begin, int64_t end),
                                      void *closure, int64_t n) {
  kiln::cpu::ThreadPool::global().parallelFor(
      n, [body, closure](int64_t begin, int64_t end) { body(closure, begin, end); });
}
