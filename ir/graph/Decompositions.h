// Decompositions of composite ops into primitives, named by the op table
// (Ops.def) and run by the `decompose` pass.
#pragma once

#include "ir/graph/OpTable.h"

namespace kiln::ir {

#define KILN_DECLARE_DECOMPOSE(name) Expected<Value *> name(Graph &graph, Node &node);
KILN_DECLARE_DECOMPOSE(decomposeGlobalAvgPool)
KILN_DECLARE_DECOMPOSE(decomposeSoftmax)
KILN_DECLARE_DECOMPOSE(decomposeLogSoftmax)
KILN_DECLARE_DECOMPOSE(decomposeLayerNorm)
KILN_DECLARE_DECOMPOSE(decomposeBatchNorm)
KILN_DECLARE_DECOMPOSE(decomposeAttention)
#undef KILN_DECLARE_DECOMPOSE

} // namespace kiln::ir
