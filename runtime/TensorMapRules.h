// The rules a tensor map's description (runtime::TensorMapArg) must meet for the driver's
// cuTensorMapEncodeTiled (cuda.h), in one place: the CUDA launcher checks them before it
// encodes a map, the bundle reader before it accepts a plan.
#pragma once

#include "runtime/Device.h"

#include <optional>
#include <string>

namespace kiln::runtime {

/// What breaks cuda.h's rules in `map` (nullopt: nothing): a rank outside 1..5 or box and
/// stride lists that do not match it, a dim outside 1..2^32 elements, a stride that is not a
/// positive multiple of 16 bytes below 2^40, a box extent outside 1..256, an inner box row
/// that is not a multiple of 16 bytes, or, with the 128-byte swizzle, longer than 128.
std::optional<std::string> tensorMapArgProblem(const TensorMapArg &map);

} // namespace kiln::runtime
