// Error texts of the SIMT simulator.
#include "runtime/sim/SimMessages.h"

#include <fmt/format.h>

namespace kiln::sim {

std::string coordText(const std::array<int64_t, 3> &coord) {
  return fmt::format("({},{},{})", coord[0], coord[1], coord[2]);
}

std::string threadCoordText(int64_t thread, const std::array<int64_t, 3> &block) {
  int64_t bx = block[0], by = block[1];
  return coordText({thread % bx, (thread / bx) % by, thread / (bx * by)});
}

std::string raceText(std::string_view buffer, int64_t element, const SharedRace &race,
                     std::string_view access, std::string_view me, std::string_view other,
                     std::string_view block) {
  std::string where = fmt::format("shared {}[{}] in block {}", buffer, element, block);
  std::string text;
  switch (race.kind) {
  case RaceKind::WriteWrite:
    text = fmt::format("write/write race on {}: threads {} and {} both write it", where, other,
                       me);
    break;
  case RaceKind::ReadWrite:
    text = fmt::format("read/write race on {}: thread {} {} it and thread {} {}s it", where, other,
                       race.otherWrote ? "writes" : "reads", me, access);
    break;
  case RaceKind::AtomicPlain: {
    // One side is an atomic (a write); the other a plain read or write.
    bool meAtomic = access == "atomic";
    bool bothWrite = race.otherWrote || access != "read";
    std::string otherDid = race.otherWrote ? "writes it"
                           : meAtomic      ? "reads it"
                                           : "updates it atomically";
    std::string meDid = meAtomic ? "updates it atomically" : fmt::format("{}s it", access);
    text = fmt::format("{} race on {}: thread {} {} and thread {} {}",
                       bothWrite ? "write/write" : "read/write", where, other, otherDid, me, meDid);
    break;
  }
  }
  return text + " with no barrier between";
}

} // namespace kiln::sim
