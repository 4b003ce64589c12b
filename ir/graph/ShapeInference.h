// Shape and dtype inference functions named by the op table (Ops.def). Each
// also checks the op's semantic rules, so it is the op's verifier hook.
#pragma once

#include "ir/graph/OpTable.h"

namespace kiln::ir {

#define KILN_DECLARE_INFER(name) Expected<TensorType> name(const InferContext &context);
KILN_DECLARE_INFER(inferUnaryNumeric)
KILN_DECLARE_INFER(inferUnaryFloat)
KILN_DECLARE_INFER(inferUnaryBool)
KILN_DECLARE_INFER(inferGelu)
KILN_DECLARE_INFER(inferCast)
KILN_DECLARE_INFER(inferBinaryNumeric)
KILN_DECLARE_INFER(inferBinaryFloat)
KILN_DECLARE_INFER(inferBinaryBool)
KILN_DECLARE_INFER(inferCompare)
KILN_DECLARE_INFER(inferWhere)
KILN_DECLARE_INFER(inferReduce)
KILN_DECLARE_INFER(inferReduceFloat)
KILN_DECLARE_INFER(inferArgReduce)
KILN_DECLARE_INFER(inferMatMul)
KILN_DECLARE_INFER(inferConv2D)
KILN_DECLARE_INFER(inferPool2D)
KILN_DECLARE_INFER(inferGlobalAvgPool)
KILN_DECLARE_INFER(inferSoftmax)
KILN_DECLARE_INFER(inferLayerNorm)
KILN_DECLARE_INFER(inferBatchNorm)
KILN_DECLARE_INFER(inferAttention)
KILN_DECLARE_INFER(inferReshape)
KILN_DECLARE_INFER(inferTranspose)
KILN_DECLARE_INFER(inferBroadcastTo)
KILN_DECLARE_INFER(inferSlice)
KILN_DECLARE_INFER(inferConcat)
KILN_DECLARE_INFER(inferPad)
KILN_DECLARE_INFER(inferGather)
KILN_DECLARE_INFER(inferTakeAlongAxis)
KILN_DECLARE_INFER(inferSqueeze)
KILN_DECLARE_INFER(inferUnsqueeze)
KILN_DECLARE_INFER(inferIota)
KILN_DECLARE_INFER(inferSymbolSize)
KILN_DECLARE_INFER(inferConstant)
KILN_DECLARE_INFER(inferAllReduce)
#undef KILN_DECLARE_INFER

/// NumPy broadcast of two shapes, or nullopt when they are incompatible.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

/// Maps a possibly negative axis into [0, rank), or nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

} // namespace kiln::ir

namespace kiln::ir {
/// Number of elements a Python-style slice start:stop:step (step >= 1) takes
/// from an axis of `size` elements.
int64_t sliceLength(int64_t size, int64_t start, int64_t stop, int64_t step);
} // namespace kiln::ir
