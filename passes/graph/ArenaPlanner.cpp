// Greedy-by-size arena planning with in-place chains.
#include "passes/graph/ArenaPlanner.h"

#include "support/Error.h"

#include <algorithm>
#include <numeric>

namespace kiln::passes {

namespace {

int64_t alignUp(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

/// Buffers that share one offset: an in-place chain a -> b -> c.
struct Slot {
  std::vector<int> members;
  int64_t bytes = 0;
  int first = 0, last = 0;
};

bool lifetimesIntersect(const Slot &a, const Slot &b) {
  return a.first <= b.last && b.first <= a.last;
}

} // namespace

ArenaPlan planArena(std::span<const BufferLifetime> buffers, int64_t alignment) {
  ArenaPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  for (const auto &buffer : buffers)
    plan.unplannedBytes += alignUp(buffer.bytes, alignment);

  // Build in-place chains: a buffer joins the slot of the one it reuses when
  // that buffer's lifetime ends where this one's begins and the slot is still
  // open (nothing joined it after that point).
  std::vector<int> slotOf(buffers.size(), -1);
  std::vector<Slot> slots;
  std::vector<int> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return buffers[a].first < buffers[b].first; });
  for (int id : order) {
    const BufferLifetime &buffer = buffers[id];
    int reused = buffer.reuses;
    if (reused >= 0 && slotOf[reused] >= 0) {
      Slot &slot = slots[slotOf[reused]];
      bool endsHere = buffers[reused].last == buffer.first && slot.last == buffer.first &&
                      slot.members.back() == reused;
      if (endsHere) {
        slot.members.push_back(id);
        slot.bytes = std::max(slot.bytes, alignUp(buffer.bytes, alignment));
        slot.last = std::max(slot.last, buffer.last);
        slotOf[id] = slotOf[reused];
        continue;
      }
    }
    slotOf[id] = static_cast<int>(slots.size());
    slots.push_back({{id}, alignUp(buffer.bytes, alignment), buffer.first, buffer.last});
  }

  // Place slots largest first; ties by first use for determinism.
  std::vector<int> slotOrder(slots.size());
  std::iota(slotOrder.begin(), slotOrder.end(), 0);
  std::stable_sort(slotOrder.begin(), slotOrder.end(), [&](int a, int b) {
    if (slots[a].bytes != slots[b].bytes)
      return slots[a].bytes > slots[b].bytes;
    return slots[a].first < slots[b].first;
  });
  std::vector<int64_t> slotOffset(slots.size(), 0);
  std::vector<int> placed;
  for (int s : slotOrder) {
    // Conflicting placed slots sorted by offset; take the first gap that fits.
    std::vector<int> conflicts;
    for (int p : placed)
      if (lifetimesIntersect(slots[s], slots[p]) && slots[p].bytes > 0)
        conflicts.push_back(p);
    std::sort(conflicts.begin(), conflicts.end(),
              [&](int a, int b) { return slotOffset[a] < slotOffset[b]; });
    int64_t offset = 0;
    for (int p : conflicts) {
      if (offset + slots[s].bytes <= slotOffset[p])
        break;
      offset = std::max(offset, slotOffset[p] + slots[p].bytes);
    }
    slotOffset[s] = offset;
    placed.push_back(s);
    plan.arenaBytes = std::max(plan.arenaBytes, offset + slots[s].bytes);
  }
  for (size_t id = 0; id < buffers.size(); ++id)
    plan.offsets[id] = slotOffset[slotOf[id]];
  return plan;
}

} // namespace kiln::passes
