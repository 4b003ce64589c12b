// Tests of the CPU thread pool: coverage of every index exactly once, odd
// sizes, concurrent callers, nested calls, exceptions, and the C entry point.
#include "runtime/cpu/ThreadPool.h"

#include "codegen/HostKernelAbi.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using kiln::cpu::ThreadPool;

namespace {

/// Runs parallelFor(n) and checks every index in [0, n) was visited exactly once.
void checkCoversOnce(ThreadPool &pool, int64_t n) {
  std::vector<std::atomic<int>> visits(static_cast<size_t>(std::max<int64_t>(n, 0)));
  std::atomic<int64_t> calls{0};
  std::atomic<bool> emptyChunk{false}; // Catch assertions are not thread-safe: record, check after
  pool.parallelFor(n, [&](int64_t begin, int64_t end) {
    if (begin >= end)
      emptyChunk = true;
    calls.fetch_add(1);
    for (int64_t i = begin; i < end; ++i)
      visits[i].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i)
    REQUIRE(visits[i].load() == 1);
  CHECK(!emptyChunk.load());
  if (n > 0)
    CHECK(calls.load() >= 1);
  else
    CHECK(calls.load() == 0);
}

} // namespace

TEST_CASE("parallelFor covers every index exactly once for many sizes", "[threadpool]") {
  ThreadPool pool(4);
  CHECK(pool.numThreads() == 4);
  for (int64_t n : {0, 1, 2, 3, 4, 5, 7, 15, 16, 17, 63, 100, 1000, 4097, 100003})
    checkCoversOnce(pool, n);
}

TEST_CASE("parallelFor with negative n does nothing", "[threadpool]") {
  ThreadPool pool(3);
  int calls = 0;
  pool.parallelFor(-5, [&](int64_t, int64_t) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("parallelFor sums match the closed form over many ranges", "[threadpool]") {
  ThreadPool pool(4);
  for (int64_t n = 0; n < 300; n += 7) {
    std::atomic<int64_t> sum{0};
    pool.parallelFor(n, [&](int64_t begin, int64_t end) {
      int64_t local = 0;
      for (int64_t i = begin; i < end; ++i)
        local += i * i + 1;
      sum.fetch_add(local);
    });
    int64_t expected = 0;
    for (int64_t i = 0; i < n; ++i)
      expected += i * i + 1;
    REQUIRE(sum.load() == expected);
  }
}

TEST_CASE("a pool of one runs inline on the calling thread", "[threadpool]") {
  ThreadPool pool(1);
  CHECK(pool.numThreads() == 1);
  std::vector<std::pair<int64_t, int64_t>> chunks;
  auto caller = std::this_thread::get_id();
  bool allOnCaller = true;
  pool.parallelFor(1000, [&](int64_t begin, int64_t end) {
    chunks.emplace_back(begin, end);
    allOnCaller = allOnCaller && std::this_thread::get_id() == caller;
  });
  REQUIRE(chunks.size() == 1);
  CHECK(chunks[0] == std::pair<int64_t, int64_t>(0, 1000));
  CHECK(allOnCaller);
}

TEST_CASE("n = 1 runs one chunk on the caller", "[threadpool]") {
  ThreadPool pool(4);
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::vector<std::thread::id> threads;
  pool.parallelFor(1, [&](int64_t begin, int64_t end) {
    chunks.emplace_back(begin, end); // no lock: this must run on the caller only
    threads.push_back(std::this_thread::get_id());
  });
  REQUIRE(chunks.size() == 1);
  CHECK(chunks[0] == std::pair<int64_t, int64_t>(0, 1));
  CHECK(threads[0] == std::this_thread::get_id());
}

TEST_CASE("chunks run on more than one thread", "[threadpool]") {
  ThreadPool pool(4);
  std::mutex mutex;
  std::set<std::thread::id> threads;
  pool.parallelFor(16, [&](int64_t, int64_t) {
    {
      std::lock_guard lock(mutex);
      threads.insert(std::this_thread::get_id());
    }
    // Long enough that the caller cannot claim every chunk before a worker wakes.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  CHECK(threads.size() >= 2);
  CHECK(threads.size() <= 4);
}

TEST_CASE("concurrent parallelFor calls from four threads all complete", "[threadpool]") {
  ThreadPool pool(3);
  constexpr int kCallers = 4;
  constexpr int kRounds = 50;
  std::vector<int64_t> results(kCallers, 0);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      int64_t total = 0;
      for (int round = 0; round < kRounds; ++round) {
        int64_t n = 1000 + 37 * c + round;
        std::atomic<int64_t> sum{0};
        pool.parallelFor(n, [&](int64_t begin, int64_t end) {
          int64_t local = 0;
          for (int64_t i = begin; i < end; ++i)
            local += i + c;
          sum.fetch_add(local);
        });
        total += sum.load() == n * (n - 1) / 2 + n * c ? 1 : 0;
      }
      results[c] = total;
    });
  }
  for (auto &t : callers)
    t.join();
  for (int c = 0; c < kCallers; ++c)
    CHECK(results[c] == kRounds);
}

TEST_CASE("nested parallelFor runs inline and completes", "[threadpool]") {
  ThreadPool pool(4);
  constexpr int64_t kOuter = 13, kInner = 29;
  std::vector<std::atomic<int>> visits(kOuter * kInner);
  std::atomic<bool> innerStayedOnThread{true};
  pool.parallelFor(kOuter, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      auto self = std::this_thread::get_id();
      pool.parallelFor(kInner, [&](int64_t b, int64_t e) {
        if (std::this_thread::get_id() != self)
          innerStayedOnThread = false;
        for (int64_t j = b; j < e; ++j)
          visits[i * kInner + j].fetch_add(1);
      });
    }
  });
  for (auto &v : visits)
    REQUIRE(v.load() == 1);
  CHECK(innerStayedOnThread.load());
}

TEST_CASE("an exception in a chunk reaches the caller after all chunks ran", "[threadpool]") {
  ThreadPool pool(4);
  std::atomic<int64_t> covered{0};
  auto run = [&] {
    pool.parallelFor(64, [&](int64_t begin, int64_t end) {
      covered.fetch_add(end - begin);
      if (begin == 0)
        throw std::runtime_error("chunk failed");
    });
  };
  CHECK_THROWS_WITH(run(), "chunk failed");
  CHECK(covered.load() == 64);
  // The pool is still usable.
  checkCoversOnce(pool, 77);
}

TEST_CASE("kiln_cpu_parallel_for runs the C body over [0, n)", "[threadpool]") {
  struct Closure {
    std::vector<std::atomic<int>> *visits;
    int64_t offset;
  };
  std::vector<std::atomic<int>> visits(531);
  Closure closure{&visits, 0};
  kiln_cpu_parallel_for(
      [](void *raw, int64_t begin, int64_t end) {
        auto *c = static_cast<Closure *>(raw);
        for (int64_t i = begin; i < end; ++i)
          (*c->visits)[i + c->offset].fetch_add(1);
      },
      &closure, 531);
  for (auto &v : visits)
    REQUIRE(v.load() == 1);
  int calls = 0;
  kiln_cpu_parallel_for([](void *raw, int64_t, int64_t) { ++*static_cast<int *>(raw); }, &calls, 0);
  CHECK(calls == 0);
}

TEST_CASE("the global pool has the default size", "[threadpool]") {
  CHECK(ThreadPool::global().numThreads() == ThreadPool::defaultThreadCount());
  CHECK(ThreadPool::defaultThreadCount() >= 1);
}

TEST_CASE("KILN_NUM_THREADS sets the default pool size", "[threadpool]") {
  const char *saved = std::getenv("KILN_NUM_THREADS");
  std::string savedValue = saved ? saved : "";
  unsetenv("KILN_NUM_THREADS");
  int hardware = ThreadPool::defaultThreadCount();
  CHECK(hardware >= 1);
  setenv("KILN_NUM_THREADS", "3", 1);
  CHECK(ThreadPool::defaultThreadCount() == 3);
  setenv("KILN_NUM_THREADS", "1", 1);
  CHECK(ThreadPool::defaultThreadCount() == 1);
  for (const char *bad : {"0", "-2", "abc", "4x", "100000"}) {
    setenv("KILN_NUM_THREADS", bad, 1);
    CHECK(ThreadPool::defaultThreadCount() == hardware);
  }
  if (saved)
    setenv("KILN_NUM_THREADS", savedValue.c_str(), 1);
  else
    unsetenv("KILN_NUM_THREADS");
}
