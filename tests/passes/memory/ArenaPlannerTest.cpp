// The arena planner: no two live buffers overlap, space is reused, in-place
// chains share an offset.
#include "passes/graph/ArenaPlanner.h"
#include "support/HostTensor.h"

#include <catch2/catch.hpp>

using namespace kiln;
using passes::BufferLifetime;
using passes::planArena;

namespace {

/// Every pair of buffers alive at a common step occupies disjoint bytes.
bool noLiveOverlap(const std::vector<BufferLifetime> &buffers, const passes::ArenaPlan &plan) {
  for (size_t a = 0; a < buffers.size(); ++a)
    for (size_t b = a + 1; b < buffers.size(); ++b) {
      bool live = buffers[a].first <= buffers[b].last && buffers[b].first <= buffers[a].last;
      bool sharedInPlace = buffers[b].reuses == static_cast<int>(a) ||
                           buffers[a].reuses == static_cast<int>(b);
      if (!live || sharedInPlace || buffers[a].bytes == 0 || buffers[b].bytes == 0)
        continue;
      bool disjoint = plan.offsets[a] + buffers[a].bytes <= plan.offsets[b] ||
                      plan.offsets[b] + buffers[b].bytes <= plan.offsets[a];
      if (!disjoint)
        return false;
    }
  return true;
}

} // namespace

TEST_CASE("Arena planner reuses the space of dead buffers", "[passes][memory]") {
  // A chain a -> b -> c -> d: at most two alive at once.
  std::vector<BufferLifetime> chain = {
      {1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  auto plan = planArena(chain);
  CHECK(plan.unplannedBytes == 4 * 1024);
  CHECK(plan.arenaBytes == 2 * 1024);
  CHECK(noLiveOverlap(chain, plan));
  for (int64_t offset : plan.offsets)
    CHECK(offset % 64 == 0);
}

TEST_CASE("Arena planner keeps every simultaneously live buffer apart", "[passes][memory]") {
  std::vector<BufferLifetime> all = {{100, 0, 5}, {200, 0, 5}, {300, 0, 5}};
  auto plan = planArena(all);
  CHECK(plan.arenaBytes == 128 + 256 + 320);
  CHECK(noLiveOverlap(all, plan));
}

TEST_CASE("Arena planner shares an offset along an in-place chain", "[passes][memory]") {
  // b overwrites a, c overwrites b; d lives across and must stay apart.
  std::vector<BufferLifetime> buffers = {
      {512, 0, 1, -1}, {512, 1, 2, 0}, {512, 2, 3, 1}, {256, 0, 3, -1}};
  auto plan = planArena(buffers);
  CHECK(plan.offsets[0] == plan.offsets[1]);
  CHECK(plan.offsets[1] == plan.offsets[2]);
  CHECK(plan.arenaBytes == 512 + 256);
  CHECK(noLiveOverlap(buffers, plan));
}

TEST_CASE("Arena planner ignores an in-place hint whose lifetimes do not meet", "[passes][memory]") {
  // b claims to reuse a, but a is still alive after b starts.
  std::vector<BufferLifetime> buffers = {{512, 0, 3, -1}, {512, 1, 2, 0}};
  auto plan = planArena(buffers);
  CHECK(plan.offsets[0] != plan.offsets[1]);
  CHECK(plan.arenaBytes == 1024);
}

TEST_CASE("Arena planner never overlaps live buffers on random lifetimes", "[passes][memory]") {
  Rng rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferLifetime> buffers;
    int count = 1 + static_cast<int>(rng.nextU64() % 30);
    for (int i = 0; i < count; ++i) {
      int first = static_cast<int>(rng.nextU64() % 20);
      int last = first + static_cast<int>(rng.nextU64() % 6);
      int reuses = -1;
      if (i > 0 && rng.nextU64() % 3 == 0)
        reuses = static_cast<int>(rng.nextU64() % i);
      if (reuses >= 0 && buffers[reuses].last != first)
        reuses = -1;
      buffers.push_back({static_cast<int64_t>(rng.nextU64() % 5000), first, last, reuses});
    }
    auto plan = planArena(buffers);
    INFO("trial " << trial);
    REQUIRE(noLiveOverlap(buffers, plan));
    CHECK(plan.arenaBytes <= plan.unplannedBytes);
  }
}
