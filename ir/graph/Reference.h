// Reference implementations named by the op table (Ops.def): the fp64 oracle
// every backend is tested against. Clear before fast.
#pragma once

#include "ir/graph/OpTable.h"

namespace kiln::ir {

#define KILN_DECLARE_REFERENCE(name)                                                               \
  Expected<std::vector<double>> name(const ReferenceContext &context);
KILN_DECLARE_REFERENCE(referenceElementwise)
KILN_DECLARE_REFERENCE(referenceReduce)
KILN_DECLARE_REFERENCE(referenceArgReduce)
KILN_DECLARE_REFERENCE(referenceMatMul)
KILN_DECLARE_REFERENCE(referenceConv2D)
KILN_DECLARE_REFERENCE(referencePool2D)
KILN_DECLARE_REFERENCE(referenceGlobalAvgPool)
KILN_DECLARE_REFERENCE(referenceSoftmax)
KILN_DECLARE_REFERENCE(referenceLogSoftmax)
KILN_DECLARE_REFERENCE(referenceLayerNorm)
KILN_DECLARE_REFERENCE(referenceBatchNorm)
KILN_DECLARE_REFERENCE(referenceAttention)
KILN_DECLARE_REFERENCE(referenceCopy)
KILN_DECLARE_REFERENCE(referenceTranspose)
KILN_DECLARE_REFERENCE(referenceBroadcastTo)
KILN_DECLARE_REFERENCE(referenceSlice)
KILN_DECLARE_REFERENCE(referenceConcat)
KILN_DECLARE_REFERENCE(referencePad)
KILN_DECLARE_REFERENCE(referenceGather)
KILN_DECLARE_REFERENCE(referenceTakeAlongAxis)
KILN_DECLARE_REFERENCE(referenceIota)
KILN_DECLARE_REFERENCE(referenceConstant)
KILN_DECLARE_REFERENCE(referenceSymbolSize)
#undef KILN_DECLARE_REFERENCE

} // namespace kiln::ir
