// The gradient rules named by the op table's gradient column (Ops.def): one
// vector-Jacobian product per differentiable op, each building only existing
// ops so every backend can run the backward graph. Implemented by category in
// ir/graph/gradients/. Conventions (ties, zeros, dtypes) are in docs/training.md.
#pragma once

#include "ir/graph/OpTable.h"
#include "ir/graph/gradients/WindowGradients.h" // conv2d, max_pool2d, avg_pool2d

namespace kiln::ir {

#define KILN_DECLARE_GRADIENT(name)                                                                \
  Expected<std::vector<Value *>> name(Graph &graph, const Node &node, Value *resultGradient);

// Elementwise, unary (ElementwiseGradients.cpp).
KILN_DECLARE_GRADIENT(gradientNeg)
KILN_DECLARE_GRADIENT(gradientAbs)
KILN_DECLARE_GRADIENT(gradientExp)
KILN_DECLARE_GRADIENT(gradientLog)
KILN_DECLARE_GRADIENT(gradientSqrt)
KILN_DECLARE_GRADIENT(gradientRsqrt)
KILN_DECLARE_GRADIENT(gradientTanh)
KILN_DECLARE_GRADIENT(gradientSigmoid)
KILN_DECLARE_GRADIENT(gradientRelu)
KILN_DECLARE_GRADIENT(gradientGelu)
KILN_DECLARE_GRADIENT(gradientSilu)
KILN_DECLARE_GRADIENT(gradientErf)
KILN_DECLARE_GRADIENT(gradientSin)
KILN_DECLARE_GRADIENT(gradientCos)
KILN_DECLARE_GRADIENT(gradientCast)
KILN_DECLARE_GRADIENT(gradientClamp)

// Elementwise, binary and ternary (ElementwiseGradients.cpp).
KILN_DECLARE_GRADIENT(gradientAdd)
KILN_DECLARE_GRADIENT(gradientSub)
KILN_DECLARE_GRADIENT(gradientMul)
KILN_DECLARE_GRADIENT(gradientDiv)
KILN_DECLARE_GRADIENT(gradientPow)
KILN_DECLARE_GRADIENT(gradientMax)
KILN_DECLARE_GRADIENT(gradientMin)
KILN_DECLARE_GRADIENT(gradientWhere)

// Reductions (ReductionGradients.cpp).
KILN_DECLARE_GRADIENT(gradientReduceSum)
KILN_DECLARE_GRADIENT(gradientReduceMean)
KILN_DECLARE_GRADIENT(gradientReduceMax)
KILN_DECLARE_GRADIENT(gradientReduceMin)
KILN_DECLARE_GRADIENT(gradientReduceProd)
KILN_DECLARE_GRADIENT(gradientGlobalAvgPool)

// Contractions (MatMulGradients.cpp, AttentionGradients.cpp).
KILN_DECLARE_GRADIENT(gradientMatMul)
KILN_DECLARE_GRADIENT(gradientAttention)

// Normalizations (NormalizationGradients.cpp).
KILN_DECLARE_GRADIENT(gradientSoftmax)
KILN_DECLARE_GRADIENT(gradientLogSoftmax)
KILN_DECLARE_GRADIENT(gradientLayerNorm)
KILN_DECLARE_GRADIENT(gradientBatchNorm)

// Data movement (MovementGradients.cpp, IndexingGradients.cpp).
KILN_DECLARE_GRADIENT(gradientReshape)
KILN_DECLARE_GRADIENT(gradientTranspose)
KILN_DECLARE_GRADIENT(gradientBroadcastTo)
KILN_DECLARE_GRADIENT(gradientSlice)
KILN_DECLARE_GRADIENT(gradientConcat)
KILN_DECLARE_GRADIENT(gradientPad)
KILN_DECLARE_GRADIENT(gradientSqueeze)
KILN_DECLARE_GRADIENT(gradientUnsqueeze)
KILN_DECLARE_GRADIENT(gradientGather)
KILN_DECLARE_GRADIENT(gradientTakeAlongAxis)

#undef KILN_DECLARE_GRADIENT

} // namespace kiln::ir
