// One graph that uses every op of the op table at odd sizes, for the CPU,
// simulator and GPU tests that check whole-table coverage against the reference.
#pragma once

#include "CompileTestUtil.h"

namespace kiln::test {

/// Adds to `c` inputs, parameters and one output per op family, together
/// using every op in ir/graph/Ops.def (the caller finalizes the graph).
void buildEveryOpGraph(CompileCase &c);

} // namespace kiln::test
