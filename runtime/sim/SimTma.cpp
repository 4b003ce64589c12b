// Mbarriers and bulk tensor copies (TMA): barrier phases, arrivals and waits (fibers run
// while one waits), and the copies that land on a wait.
#include "runtime/sim/SimtMachine.h"

#include "ir/kernel/TensorMap.h"

#include <cstring>

namespace kiln::sim {

using namespace kiln::kir;

/// Thread `t`'s barrier `element` of `buffer`: in bounds, initialized, and (for another
/// thread than the initializing one) behind a barrier since its init.
MbarrierState *SimtMachine::mbarrierOf(int buffer, int64_t element, size_t t,
                                       std::string_view what) {
  SimMemory *memory = memoryOf(buffer);
  if (!memory)
    return nullptr;
  if (element < 0 || element >= memory->size) {
    raise(fmt::format("{} on mbarrier {}[{}] {}: outside its {} barriers", what,
                      memory->buffer->name, element, byThread(static_cast<int64_t>(t)),
                      memory->size));
    return nullptr;
  }
  MbarrierState &state = memory->mbarriers[static_cast<size_t>(element)];
  if (!state.initialized) {
    raise(fmt::format("{} on mbarrier {}[{}] {}, which is not initialized (mbarrier_init)", what,
                      memory->buffer->name, element, byThread(static_cast<int64_t>(t))));
    return nullptr;
  }
  if (static_cast<int32_t>(t) != state.initThread && state.initEpoch == epoch_) {
    raise(fmt::format("{} on mbarrier {}[{}] {}, which thread {} initialized with no barrier "
                      "since",
                      what, memory->buffer->name, element, byThread(static_cast<int64_t>(t)),
                      threadText(state.initThread)));
    return nullptr;
  }
  return &state;
}

std::string SimtMachine::barrierText(int buffer, int64_t element) const {
  return fmt::format("{}[{}]", memories_[static_cast<size_t>(buffer)].buffer->name, element);
}

bool SimtMachine::mbarrier(const SimStmt &node, Active a) {
  const auto op = static_cast<MbarrierOp>(node.op);
  SimMemory *memory = memoryOf(node.buffer);
  if (!memory || !eval(node.exprs[0], a) ||
      (node.exprs[1] != kNoNode && !eval(node.exprs[1], a)))
    return false;
  const Scalar *index = column(node.exprs[0]);
  if (op == MbarrierOp::Wait)
    return mbarrierWait(node, a, index, column(node.exprs[1]));
  bool completedPhase = false;
  for (int32_t i = 0; i < a.count; ++i) {
    const size_t t = static_cast<size_t>(a.ids[i]);
    const int64_t element = index[t].i;
    if (op == MbarrierOp::Init) {
      if (element < 0 || element >= memory->size)
        return raise(fmt::format("mbarrier_init of {} {}: outside its {} barriers",
                                 barrierText(node.buffer, element),
                                 byThread(static_cast<int64_t>(t)), memory->size));
      MbarrierState &state = memory->mbarriers[static_cast<size_t>(element)];
      if (state.initialized)
        return raise(fmt::format("mbarrier {} initialized again {} (thread {} did before)",
                                 barrierText(node.buffer, element),
                                 byThread(static_cast<int64_t>(t)),
                                 threadText(state.initThread)));
      state = MbarrierState{};
      state.initialized = true;
      state.expected = state.pending = node.count;
      state.initThread = static_cast<int32_t>(t);
      state.initEpoch = epoch_;
      continue;
    }
    MbarrierState *state = mbarrierOf(node.buffer, element, t, fmt::format("mbarrier_{}",
                                                                          mbarrierOpName(op)));
    if (!state)
      return false;
    if (state->pending == 0)
      return raise(fmt::format("mbarrier_{} on {} {} is one arrival more than the {} its phase "
                               "expects (its bytes have not all landed)",
                               mbarrierOpName(op), barrierText(node.buffer, element),
                               byThread(static_cast<int64_t>(t)), state->expected));
    if (op == MbarrierOp::ArriveExpectTx)
      state->tx += node.count;
    --state->pending;
    const int64_t phases = state->phases;
    state->completeIfDone();
    completedPhase = completedPhase || state->phases != phases;
  }
  if (!completedPhase)
    return true;
  // A fiber waiting for this phase runs now, before this one goes on.
  Stacks *mine = stacks_;
  const bool ok = fibers_.yield();
  stacks_ = mine;
  return ok || raise("deadlock: every fiber of the block waits for another:\n" +
                     fibers_.deadlockReport());
}

/// The threads of `a` wait until the phase of their parity of their barrier has completed;
/// the copies completing on those barriers land first. Other fibers run meanwhile.
bool SimtMachine::mbarrierWait(const SimStmt &node, Active a, const Scalar *index,
                               const Scalar *parity) {
  std::vector<std::pair<int64_t, int64_t>> waits; // (barrier, parity) per thread of a
  for (int32_t i = 0; i < a.count; ++i) {
    const size_t t = static_cast<size_t>(a.ids[i]);
    if (parity[t].i != 0 && parity[t].i != 1)
      return raise(fmt::format("mbarrier_wait on {} {} for parity {} (0 or 1)",
                               barrierText(node.buffer, index[t].i),
                               byThread(static_cast<int64_t>(t)), parity[t].i));
    if (!mbarrierOf(node.buffer, index[t].i, t, "mbarrier_wait"))
      return false;
    waits.emplace_back(index[t].i, parity[t].i);
  }
  const int buffer = node.buffer;
  auto ready = [this, buffer, &waits]() {
    for (auto [barrier, parityWanted] : waits) {
      for (const PendingTma &copy : mbarriers_.takeCopiesOn(buffer, barrier))
        if (!landTma(copy))
          return true; // the waiter finds the error
      if (!memories_[static_cast<size_t>(buffer)]
               .mbarriers[static_cast<size_t>(barrier)]
               .phaseDone(parityWanted))
        return false;
    }
    return true;
  };
  const std::string what =
      fmt::format("threads {} to {} of block {} wait on mbarrier {} for the phase of parity {}",
                  threadText(a.ids[0]), threadText(a.ids[a.count - 1]), blockText(),
                  barrierText(buffer, waits.front().first), waits.front().second);
  Stacks *mine = stacks_;
  const bool ok = fibers_.block(ready, what);
  stacks_ = mine;
  if (error_)
    return false;
  if (!ok)
    return raise("deadlock: every fiber of the block waits for another:\n" +
                 fibers_.deadlockReport());
  return true;
}

/// Issues each thread's copy of a box: read from global memory now, landing when a wait on
/// its barrier needs it.
bool SimtMachine::tmaLoad(const SimStmt &node, Active a) {
  const TensorMap &map = *node.tma->map;
  SimMemory *destination = memoryOf(node.buffer);
  SimMemory *source = memoryOf(node.source);
  if (!destination || !source || !eval(node.exprs[0], a) || !eval(node.exprs[1], a))
    return false;
  for (int c : node.coords)
    if (!eval(c, a))
      return false;
  const Scalar *toIndex = column(node.exprs[0]), *barrierIndex = column(node.exprs[1]);
  const int rank = static_cast<int>(map.dims.size());
  const int64_t bytes = destination->elementBytes;
  const int64_t boxElements = tmaBoxElements(map);
  const int64_t base = launch_.sharedOffset(destination->buffer);
  for (int32_t i = 0; i < a.count; ++i) {
    const size_t t = static_cast<size_t>(a.ids[i]);
    const std::string what = fmt::format("bulk tensor copy through {} {}", map.name,
                                         byThread(static_cast<int64_t>(t)));
    if (!mbarrierOf(node.barriers, barrierIndex[t].i, t, "a bulk tensor copy completing"))
      return false;
    const int64_t first = toIndex[t].i;
    const int64_t alignment = tmaDestinationAlignment(map);
    if (base < 0 || (base + first * bytes) % alignment != 0)
      return raise(fmt::format("{} lands at shared {}[{}], not at a {}-byte boundary", what,
                               destination->buffer->name, first, alignment));
    PendingTma copy;
    copy.buffer = node.buffer;
    copy.barrierBuffer = node.barriers;
    copy.barrier = barrierIndex[t].i;
    copy.byteCount = boxElements * bytes;
    copy.issuer = static_cast<int32_t>(t);
    copy.elements.resize(static_cast<size_t>(boxElements));
    copy.bytes.assign(static_cast<size_t>(copy.byteCount), std::byte{0});
    std::vector<int64_t> at(static_cast<size_t>(rank), 0); // the box element's coordinates
    for (int64_t linear = 0; linear < boxElements; ++linear) {
      bool inside = true;
      int64_t global = 0;
      for (int d = 0; d < rank; ++d) {
        const int64_t coord = column(node.coords[static_cast<size_t>(d)])[t].i + at[d];
        inside = inside && coord >= 0 && coord < map.dims[static_cast<size_t>(d)];
        global += coord * (d == 0 ? 1 : map.strides[static_cast<size_t>(d - 1)]);
      }
      if (inside) {
        std::memcpy(copy.bytes.data() + linear * bytes, source->data + global * bytes,
                    static_cast<size_t>(bytes));
        ++stats_.globalLoads;
      }
      const int64_t element = first + tmaBoxByte(map, linear) / bytes;
      if (element < 0 || element >= destination->size)
        return raise(fmt::format("{}: box element {} lands at shared {}[{}], outside its {} "
                                 "elements",
                                 what, linear, destination->buffer->name, element,
                                 destination->size));
      if (destination->inFlight[static_cast<size_t>(element)] != 0)
        return inFlightError(*destination, element, t, "bulk copy write");
      if (!checkNoWgmmaReader(*destination, element, t, "bulk tensor copy into"))
        return false;
      copy.elements[static_cast<size_t>(linear)] = element;
      for (int d = 0; d < rank && ++at[d] == map.box[static_cast<size_t>(d)]; ++d)
        at[d] = 0;
    }
    for (int64_t element : copy.elements)
      ++destination->inFlight[static_cast<size_t>(element)];
    mbarriers_.issue(std::move(copy));
    ++stats_.bulkCopies;
  }
  return true;
}

/// Lands a bulk copy: its box into shared memory (through the async proxy, so a wgmma may
/// read it with no proxy fence), its bytes off its barrier's phase.
bool SimtMachine::landTma(const PendingTma &copy) {
  SimMemory &memory = memories_[static_cast<size_t>(copy.buffer)];
  for (size_t i = 0; i < copy.elements.size(); ++i) {
    const size_t element = static_cast<size_t>(copy.elements[i]);
    --memory.inFlight[element];
    memory.written[element] = 1;
    if (!memory.fencesAtWrite.empty()) {
      memory.fencesAtWrite[element] = -1;
      memory.writer[element] = -1;
    }
    std::memcpy(memory.data + copy.elements[i] * memory.elementBytes,
                copy.bytes.data() + static_cast<int64_t>(i) * memory.elementBytes,
                static_cast<size_t>(memory.elementBytes));
    ++stats_.sharedStores;
  }
  MbarrierState &state = memories_[static_cast<size_t>(copy.barrierBuffer)]
                             .mbarriers[static_cast<size_t>(copy.barrier)];
  state.tx -= copy.byteCount;
  if (state.tx < 0)
    return raise(fmt::format("a bulk tensor copy issued by thread {} of block {} completes {} "
                             "bytes on mbarrier {}, more than its phase expects (no "
                             "mbarrier_arrive_expect_tx for them)",
                             threadText(copy.issuer), blockText(), copy.byteCount,
                             barrierText(copy.barrierBuffer, copy.barrier)));
  state.completeIfDone();
  return true;
}

/// At the end of a block every bulk copy must have landed for a wait on its barrier.
bool SimtMachine::checkBulkCopiesLanded() {
  const PendingTma *copy = mbarriers_.firstInFlight();
  if (!copy)
    return true;
  return raise(fmt::format("a bulk tensor copy into shared {} issued by thread {} of block {} "
                           "was never waited for (no mbarrier_wait on {} saw it land) before "
                           "the block ended",
                           memories_[static_cast<size_t>(copy->buffer)].buffer->name,
                           threadText(copy->issuer), blockText(),
                           barrierText(copy->barrierBuffer, copy->barrier)));
}

} // namespace kiln::sim
