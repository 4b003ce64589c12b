// Asynchronous copies (cp.async): issued with their global source read, landed in shared
// memory when an async wait of the issuing thread retires their group.
#include "runtime/sim/SimtMachine.h"

#include <cstring>

namespace kiln::sim {

using namespace kiln::kir;

/// Issues each thread's copy: indices, predicate and the global source are
/// read now; the shared destination is written when an AsyncWait retires it.
bool SimtMachine::asyncCopy(const SimStmt &node, Active a) {
  SimMemory *destination = memoryOf(node.buffer);
  SimMemory *source = memoryOf(node.source);
  if (!destination || !source || !eval(node.exprs[0], a) || !eval(node.exprs[1], a))
    return false;
  const Scalar *predicate = nullptr;
  if (node.exprs[2] != kNoNode) {
    if (!eval(node.exprs[2], a))
      return false;
    predicate = column(node.exprs[2]);
  }
  const Scalar *toIndex = column(node.exprs[0]), *fromIndex = column(node.exprs[1]);
  const int lanes = node.op;
  const size_t bytes = static_cast<size_t>(lanes * source->elementBytes);
  for (int32_t i = 0; i < a.count; ++i) {
    const size_t t = static_cast<size_t>(a.ids[i]);
    PendingCopy copy;
    copy.buffer = node.buffer;
    copy.index = toIndex[t].i;
    copy.lanes = lanes;
    copy.zeroFill = predicate && predicate[t].i == 0;
    if (!checkAccess(*destination, copy.index, lanes, nullptr, false, t, "async copy write"))
      return false;
    if (!copy.zeroFill) {
      int64_t from = fromIndex[t].i;
      if (!checkAccess(*source, from, lanes, nullptr, false, t, "async copy read"))
        return false;
      std::memcpy(copy.bytes.data(), source->data + from * source->elementBytes, bytes);
      stats_.globalLoads += lanes;
    }
    for (int l = 0; l < lanes; ++l) {
      // The copy may land any time from now: not into an operand a product may still read.
      if (!checkNoWgmmaReader(*destination, copy.index + l, t, "async copy into"))
        return false;
      ++destination->inFlight[static_cast<size_t>(copy.index + l)];
    }
    asyncCopies_.issue(a.ids[i], copy);
    ++stats_.asyncCopies;
  }
  return true;
}

/// Lands thread `t`'s copy: shared stores by `t` now, race-checked as such.
bool SimtMachine::landCopy(int32_t t, const PendingCopy &copy) {
  SimMemory *memory = memoryOf(copy.buffer);
  if (!memory)
    return false;
  for (int l = 0; l < copy.lanes; ++l) {
    const int64_t element = copy.index + l;
    --memory->inFlight[static_cast<size_t>(element)];
    if (memory->trackRaces)
      if (auto race = memory->races.write(element, t, epoch_))
        return raceError(*memory, element, *race, static_cast<size_t>(t), "write");
    memory->written[static_cast<size_t>(element)] = 1;
    noteGenericWrite(*memory, element, t);
    std::byte *to = memory->data + element * memory->elementBytes;
    if (copy.zeroFill)
      std::memset(to, 0, static_cast<size_t>(memory->elementBytes));
    else
      std::memcpy(to, copy.bytes.data() + l * memory->elementBytes,
                  static_cast<size_t>(memory->elementBytes));
    ++stats_.sharedStores;
  }
  return true;
}

/// cp.async.commit_group: each thread's uncommitted copies become its newest group.
bool SimtMachine::asyncCommit(Active a) {
  for (int32_t i = 0; i < a.count; ++i)
    asyncCopies_.commit(a.ids[i]);
  return true;
}

bool SimtMachine::asyncWait(const SimStmt &node, Active a) {
  for (int32_t i = 0; i < a.count; ++i) {
    const int32_t t = a.ids[i];
    if (!asyncCopies_.retire(t, node.op, [&](const PendingCopy &copy) {
          return landCopy(t, copy);
        }))
      return false;
  }
  return true;
}

/// At the end of a block every copy must have landed: a kernel waits for
/// its copies (cp.async.wait_group) before it ends.
bool SimtMachine::checkCopiesLanded() {
  int32_t t = 0;
  const PendingCopy *copy = asyncCopies_.firstInFlight(t);
  if (!copy)
    return true;
  const SimMemory &memory = memories_[static_cast<size_t>(copy->buffer)];
  return raise(fmt::format("async copy into shared {}[{}] (and {} more elements) {} was "
                           "never waited for: {} before the block ended",
                           memory.buffer->name, copy->index, copy->lanes - 1, byThread(t),
                           asyncCopies_.uncommitted(t, *copy)
                               ? "it was not committed (async_commit) and retired (async_wait)"
                               : "no async wait retired its group"));
}

} // namespace kiln::sim
