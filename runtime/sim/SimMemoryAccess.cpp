// The lockstep machine's memory accesses: loads, stores and atomics, with their bounds,
// poison, race and in-flight checks.
#include "runtime/sim/SimtMachine.h"

#include "ir/kernel/Evaluator.h"
#include "ir/kernel/ScalarOps.h"

namespace kiln::sim {

using namespace kiln::kir;

SimMemory *SimtMachine::memoryOf(int buffer) {
  SimMemory &memory = memories_[static_cast<size_t>(buffer)];
  if (!memory.bound) {
    raise(fmt::format("buffer {} is neither a parameter nor allocated here",
                      memory.buffer->name));
    return nullptr;
  }
  return &memory;
}

bool SimtMachine::outOfBounds(const SimMemory &memory, int64_t first, int lane, int lanes,
                              std::string_view access, int64_t thread) {
  return raise(fmt::format("{} {}",
                           outOfBoundsText(access, memory.buffer->name, memory.size, first,
                                           lane, lanes),
                           byThread(thread)));
}

bool SimtMachine::raceError(const SimMemory &memory, int64_t element, const SharedRace &race,
                            size_t t, std::string_view access) {
  return raise(raceText(memory.buffer->name, element, race, access,
                        threadText(static_cast<int64_t>(t)), threadText(race.otherThread),
                        blockText()));
}

bool SimtMachine::inFlightError(const SimMemory &memory, int64_t element, size_t t,
                                std::string_view access) {
  const int buffer = static_cast<int>(&memory - memories_.data());
  if (const PendingTma *copy = mbarriers_.writerOf(buffer, element))
    return raise(fmt::format("{} of shared {}[{}] {} while a bulk tensor copy into it is in "
                             "flight (issued by thread {}; it lands for a wait on mbarrier "
                             "{}[{}])",
                             access, memory.buffer->name, element,
                             byThread(static_cast<int64_t>(t)), threadText(copy->issuer),
                             memories_[static_cast<size_t>(copy->barrierBuffer)].buffer->name,
                             copy->barrier));
  int32_t issuer = 0;
  asyncCopies_.find(issuer, [&](const PendingCopy &copy) { return copy.writes(buffer, element); });
  return raise(fmt::format("{} of shared {}[{}] {} while an async copy into it is in flight "
                           "(issued by thread {}, not yet retired by an async wait)",
                           access, memory.buffer->name, element,
                           byThread(static_cast<int64_t>(t)), threadText(issuer)));
}

bool SimtMachine::load(const SimExpr &node, Active a) {
  SimMemory *memory = memoryOf(node.buffer);
  if (!memory || !eval(node.args[0], a))
    return false;
  const Scalar *mask = nullptr;
  bool wideMask = false;
  if (node.args[1] != kNoNode) {
    if (!eval(node.args[1], a))
      return false;
    mask = column(node.args[1]);
    wideMask = program_.exprs[static_cast<size_t>(node.args[1])].type.lanes != 1;
  }
  const Scalar *index = column(node.args[0]);
  Scalar *out = output(node);
  const int lanes = node.type.lanes;
  const DType dtype = node.type.dtype;
  const size_t T = this->T();
  const bool global = memory->buffer->scope == MemScope::Global;
  const bool shared = memory->buffer->scope == MemScope::Shared;
  for (int32_t i = 0; i < a.count; ++i) {
    size_t t = static_cast<size_t>(a.ids[i]);
    int64_t first = index[t].i;
    if (!checkAccess(*memory, first, lanes, mask, wideMask, t, "load"))
      return false;
    for (int l = 0; l < lanes; ++l) {
      size_t at = l * T + t;
      if (mask && mask[wideMask ? at : t].i == 0) {
        out[at] = Scalar{};
        continue;
      }
      int64_t element = elementOf(*memory, t, first + l);
      if (!memory->inFlight.empty() && memory->inFlight[static_cast<size_t>(element)] != 0)
        return inFlightError(*memory, element, t, "read");
      if (memory->trackWrites && !memory->written[static_cast<size_t>(element)])
        return raise(fmt::format("read of {} {}[{}], which no thread has written, {}",
                                 memScopeName(memory->buffer->scope), memory->buffer->name,
                                 first + l, byThread(static_cast<int64_t>(t))));
      if (memory->trackRaces)
        if (auto race = memory->races.read(element, static_cast<int64_t>(t), epoch_))
          return raceError(*memory, element, *race, t, "read");
      out[at] = loadElement(memory->data + element * memory->elementBytes, dtype);
      stats_.globalLoads += global;
      stats_.sharedLoads += shared;
    }
  }
  return true;
}

bool SimtMachine::store(const SimStmt &node, Active a) {
  SimMemory *memory = memoryOf(node.buffer);
  if (!memory || !eval(node.exprs[0], a) || !eval(node.exprs[1], a))
    return false;
  const Scalar *mask = nullptr;
  bool wideMask = false;
  if (node.exprs[2] != kNoNode) {
    if (!eval(node.exprs[2], a))
      return false;
    mask = column(node.exprs[2]);
    wideMask = program_.exprs[static_cast<size_t>(node.exprs[2])].type.lanes != 1;
  }
  const Scalar *index = column(node.exprs[0]);
  const Scalar *value = column(node.exprs[1]);
  const int lanes = program_.exprs[static_cast<size_t>(node.exprs[1])].type.lanes;
  const DType dtype = memory->buffer->dtype;
  const size_t T = this->T();
  const bool global = memory->buffer->scope == MemScope::Global;
  const bool shared = memory->buffer->scope == MemScope::Shared;
  for (int32_t i = 0; i < a.count; ++i) {
    size_t t = static_cast<size_t>(a.ids[i]);
    int64_t first = index[t].i;
    if (!checkAccess(*memory, first, lanes, mask, wideMask, t, "store"))
      return false;
    for (int l = 0; l < lanes; ++l) {
      size_t at = l * T + t;
      if (mask && mask[wideMask ? at : t].i == 0)
        continue;
      int64_t element = elementOf(*memory, t, first + l);
      if (!memory->inFlight.empty() && memory->inFlight[static_cast<size_t>(element)] != 0)
        return inFlightError(*memory, element, t, "write");
      if (!checkNoWgmmaReader(*memory, element, t, "write"))
        return false;
      if (memory->trackRaces)
        if (auto race = memory->races.write(element, static_cast<int64_t>(t), epoch_))
          return raceError(*memory, element, *race, t, "write");
      if (memory->trackWrites)
        memory->written[static_cast<size_t>(element)] = 1;
      noteGenericWrite(*memory, element, static_cast<int32_t>(t));
      storeElement(memory->data + element * memory->elementBytes, dtype, value[at]);
      stats_.globalStores += global;
      stats_.sharedStores += shared;
    }
  }
  return true;
}

bool SimtMachine::atomic(const SimStmt &node, Active a) {
  SimMemory *memory = memoryOf(node.buffer);
  if (!memory || !eval(node.exprs[0], a) || !eval(node.exprs[1], a))
    return false;
  const Scalar *index = column(node.exprs[0]);
  const Scalar *value = column(node.exprs[1]);
  const DType dtype = memory->buffer->dtype;
  BinaryOp op = BinaryOp::Add;
  switch (static_cast<AtomicOp>(node.op)) {
  case AtomicOp::Add: op = BinaryOp::Add; break;
  case AtomicOp::Max: op = BinaryOp::Max; break;
  case AtomicOp::Min: op = BinaryOp::Min; break;
  }
  const bool global = memory->buffer->scope == MemScope::Global;
  // Threads' updates land in linear thread order.
  for (int32_t i = 0; i < a.count; ++i) {
    size_t t = static_cast<size_t>(a.ids[i]);
    int64_t element = index[t].i;
    if (!checkAccess(*memory, element, 1, nullptr, false, t, "atomic"))
      return false;
    if (!memory->inFlight.empty() && memory->inFlight[static_cast<size_t>(element)] != 0)
      return inFlightError(*memory, element, t, "atomic update");
    if (!checkNoWgmmaReader(*memory, element, t, "atomic update"))
      return false;
    if (memory->trackWrites && !memory->written[static_cast<size_t>(element)])
      return raise(fmt::format("atomic {} on {} {}[{}], which no thread has written, {}",
                               atomicOpName(static_cast<AtomicOp>(node.op)),
                               memScopeName(memory->buffer->scope), memory->buffer->name,
                               element, byThread(static_cast<int64_t>(t))));
    if (memory->trackRaces)
      if (auto race = memory->races.atomic(element, static_cast<int64_t>(t), epoch_))
        return raceError(*memory, element, *race, t, "atomic");
    std::byte *at = memory->data + element * memory->elementBytes;
    noteGenericWrite(*memory, element, static_cast<int32_t>(t));
    storeElement(at, dtype, binaryLane(op, dtype, loadElement(at, dtype), value[t]));
    stats_.globalStores += global;
    stats_.sharedStores += !global;
    ++stats_.atomics;
  }
  return true;
}

} // namespace kiln::sim
