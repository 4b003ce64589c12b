// The check at the start of data-parallel training that every rank compiled the
// same program: ranks that differ would exchange gradients of different shapes.
#pragma once

#include "runtime/dist/Communicator.h"

#include <cstdint>

namespace kiln::runtime::dist {

/// Compares `programHash` (a 64-bit hash the caller computes, e.g. of the compiled
/// program's text) across the ranks of a host communicator. On a mismatch every rank
/// gets the same InvalidArgument naming each distinct hash and the ranks that hold
/// it; a collective's own failure (a missing rank) comes back as it is.
Expected<void> verifySameProgram(Communicator &communicator, uint64_t programHash);

} // namespace kiln::runtime::dist
