// One graph that uses every op of the op table at odd sizes, for the CPU,
// simulator and GPU tests that check whole-table coverage against the reference.
#pragma once

#include "CompileTestUtil.h"

#include <cstdint>

namespace kiln::test {

/// Adds to `c` inputs, parameters and one output per op family, together
/// using every op in ir/graph/Ops.def (the caller finalizes the graph). The
/// inputs have `batch` rows; with 0, every op meets an empty operand (most
/// outputs are empty; a reduction over the batch gives its identity).
void buildEveryOpGraph(CompileCase &c, int64_t batch = 2);

} // namespace kiln::test
