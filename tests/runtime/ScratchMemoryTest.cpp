// Kernel scratch memory: aligned, writable blocks, reused by the thread that
// freed them (so a kernel's per-call buffers stop faulting in fresh pages),
// with what a thread keeps bounded.
#include "codegen/HostKernelAbi.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

TEST_CASE("scratch blocks are 64-byte aligned and writable", "[runtime][scratch]") {
  for (int64_t bytes : {int64_t{0}, int64_t{1}, int64_t{100}, int64_t{1} << 20, int64_t{3} << 20}) {
    INFO(bytes);
    void *block = kiln_cpu_scratch_alloc(bytes);
    REQUIRE(block != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(block) % 64 == 0);
    std::memset(block, 0x5a, static_cast<size_t>(bytes));
    kiln_cpu_scratch_free(block);
  }
  kiln_cpu_scratch_free(nullptr); // like free(nullptr)
}

namespace {
/// Runs `body` on a fresh thread, whose kept blocks start empty.
template <typename Body> void onFreshThread(Body body) { std::thread(body).join(); }
} // namespace

TEST_CASE("a freed scratch block is handed out again to its thread", "[runtime][scratch]") {
  onFreshThread([] {
    void *first = kiln_cpu_scratch_alloc(2 << 20);
    kiln_cpu_scratch_free(first);
    // The same size, and a smaller one, come from the kept block.
    void *again = kiln_cpu_scratch_alloc(2 << 20);
    CHECK(again == first);
    kiln_cpu_scratch_free(again);
    void *smaller = kiln_cpu_scratch_alloc(1 << 20);
    CHECK(smaller == first);
    // A larger one cannot use it.
    void *larger = kiln_cpu_scratch_alloc(3 << 20);
    CHECK(larger != first);
    kiln_cpu_scratch_free(smaller);
    kiln_cpu_scratch_free(larger);

    // Two buffers live at once (a packed A block and a B panel) are distinct.
    void *a = kiln_cpu_scratch_alloc(1 << 20);
    void *b = kiln_cpu_scratch_alloc(1 << 20);
    CHECK(a != b);
    std::memset(a, 1, 1 << 20);
    std::memset(b, 2, 1 << 20);
    CHECK(static_cast<unsigned char *>(a)[12345] == 1);
    kiln_cpu_scratch_free(a);
    kiln_cpu_scratch_free(b);
  });
}

TEST_CASE("a thread keeps a bounded number of scratch bytes", "[runtime][scratch]") {
  onFreshThread([] {
    // Free more blocks than a thread keeps, each 16 MiB: only a few come back,
    // and allocating them all again still works (ASan checks nothing leaks).
    std::vector<void *> blocks;
    for (int i = 0; i < 6; ++i)
      blocks.push_back(kiln_cpu_scratch_alloc(int64_t{16} << 20));
    std::set<void *> freed(blocks.begin(), blocks.end());
    for (void *block : blocks)
      kiln_cpu_scratch_free(block);
    int reused = 0;
    std::vector<void *> again;
    for (int i = 0; i < 6; ++i) {
      again.push_back(kiln_cpu_scratch_alloc(int64_t{16} << 20));
      reused += freed.count(again.back()) ? 1 : 0;
    }
    CHECK(reused >= 1);
    CHECK(reused <= 2); // at most 40 MiB kept: two blocks of 16 MiB
    for (void *block : again)
      kiln_cpu_scratch_free(block);
  });

  // Another thread's blocks are its own, and go when it ends.
  std::thread other([] {
    void *block = kiln_cpu_scratch_alloc(4 << 20);
    kiln_cpu_scratch_free(block);
    CHECK(kiln_cpu_scratch_alloc(4 << 20) == block);
    kiln_cpu_scratch_free(block);
  });
  other.join();
}
