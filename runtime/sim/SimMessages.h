// The texts of the simulator's run-time errors that name threads, blocks and
// accesses, kept in one place so every report reads the same way.
#pragma once

#include "runtime/sim/SharedRaceLog.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::sim {

/// "(x,y,z)".
std::string coordText(const std::array<int64_t, 3> &coord);

/// "(x,y,z)" of linear thread `thread` (x fastest) in a block of shape `block`.
std::string threadCoordText(int64_t thread, const std::array<int64_t, 3> &block);

/// "read/write race on shared s[3] in block (0,0,0): thread (4,0,0) writes it
/// and thread (3,0,0) reads it with no barrier between". `access` is what the
/// current thread `me` does ("read", "write" or "atomic"); `other` did the
/// earlier access that `race` describes.
std::string raceText(std::string_view buffer, int64_t element, const SharedRace &race,
                     std::string_view access, std::string_view me, std::string_view other,
                     std::string_view block);

} // namespace kiln::sim
