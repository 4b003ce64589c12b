// Decompositions of composite ops into primitives, named by the op table
// (Ops.def) and run by the `decompose` pass (and, for the composite
// elementwise ops, by the interpreter and autodiff too).
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
// The composite elementwise ops (ElementwiseDecompositions.cpp).
KILN_DECLARE_DECOMPOSE(decomposeRelu6)
KILN_DECLARE_DECOMPOSE(decomposeHardSigmoid)
KILN_DECLARE_DECOMPOSE(decomposeHardSwish)
KILN_DECLARE_DECOMPOSE(decomposeSoftplus)
KILN_DECLARE_DECOMPOSE(decomposeMish)
KILN_DECLARE_DECOMPOSE(decomposeLeakyRelu)
KILN_DECLARE_DECOMPOSE(decomposeElu)
#undef KILN_DECLARE_DECOMPOSE

} // namespace kiln::ir
