// The converter functions of the registry (ConverterRegistry.cpp), by family, and the
// helpers they share.
#pragma once

#include "frontend/Ops.h"
#include "frontend/onnx/OnnxNode.h"

namespace kiln::onnx {

// ---- Helpers ----------------------------------------------------------------------------------
/// An axis attribute or input counted from the end when negative, checked against `rank`.
Expected<int64_t> normalizeAxis(OnnxNode &node, int64_t axis, int64_t rank, std::string_view what);
/// The node's first input converted by a one-operand DSL function.
template <typename Fn> Expected<void> convertUnary(OnnxNode &node, Fn fn) {
  KILN_TRY(Tensor x, node.input(0));
  node.setOutput(0, fn(x));
  return {};
}

// ---- Elementwise (ElementwiseConverters.cpp) --------------------------------------------------
Expected<void> convertAbs(OnnxNode &node);
Expected<void> convertAdd(OnnxNode &node);
Expected<void> convertAnd(OnnxNode &node);
Expected<void> convertCast(OnnxNode &node);
Expected<void> convertClip(OnnxNode &node);
Expected<void> convertCos(OnnxNode &node);
Expected<void> convertDiv(OnnxNode &node);
Expected<void> convertDropout(OnnxNode &node);
Expected<void> convertElu(OnnxNode &node);
Expected<void> convertEqual(OnnxNode &node);
Expected<void> convertErf(OnnxNode &node);
Expected<void> convertExp(OnnxNode &node);
Expected<void> convertGreater(OnnxNode &node);
Expected<void> convertGreaterOrEqual(OnnxNode &node);
Expected<void> convertHardSigmoid(OnnxNode &node);
Expected<void> convertHardSwish(OnnxNode &node);
Expected<void> convertIdentity(OnnxNode &node);
Expected<void> convertLeakyRelu(OnnxNode &node);
Expected<void> convertLess(OnnxNode &node);
Expected<void> convertLessOrEqual(OnnxNode &node);
Expected<void> convertLog(OnnxNode &node);
Expected<void> convertMax(OnnxNode &node);
Expected<void> convertMin(OnnxNode &node);
Expected<void> convertMul(OnnxNode &node);
Expected<void> convertNeg(OnnxNode &node);
Expected<void> convertNot(OnnxNode &node);
Expected<void> convertOr(OnnxNode &node);
Expected<void> convertPow(OnnxNode &node);
Expected<void> convertReciprocal(OnnxNode &node);
Expected<void> convertRelu(OnnxNode &node);
Expected<void> convertSigmoid(OnnxNode &node);
Expected<void> convertSin(OnnxNode &node);
Expected<void> convertSoftplus(OnnxNode &node);
Expected<void> convertSqrt(OnnxNode &node);
Expected<void> convertSub(OnnxNode &node);
Expected<void> convertSum(OnnxNode &node);
Expected<void> convertTanh(OnnxNode &node);
Expected<void> convertWhere(OnnxNode &node);

// ---- Contractions and windows (ContractionConverters.cpp) -------------------------------------
Expected<void> convertAveragePool(OnnxNode &node);
Expected<void> convertConv(OnnxNode &node);
Expected<void> convertGemm(OnnxNode &node);
Expected<void> convertGlobalAveragePool(OnnxNode &node);
Expected<void> convertGlobalMaxPool(OnnxNode &node);
Expected<void> convertMatMul(OnnxNode &node);
Expected<void> convertMaxPool(OnnxNode &node);

// ---- Normalizations and reductions (ReductionConverters.cpp) ----------------------------------
Expected<void> convertArgMax(OnnxNode &node);
Expected<void> convertArgMin(OnnxNode &node);
Expected<void> convertBatchNormalization(OnnxNode &node);
Expected<void> convertLayerNormalization(OnnxNode &node);
Expected<void> convertLogSoftmax(OnnxNode &node);
Expected<void> convertReduceMax(OnnxNode &node);
Expected<void> convertReduceMean(OnnxNode &node);
Expected<void> convertReduceMin(OnnxNode &node);
Expected<void> convertReduceProd(OnnxNode &node);
Expected<void> convertReduceSum(OnnxNode &node);
Expected<void> convertSoftmax(OnnxNode &node);

// ---- Recurrences (RecurrentConverters.cpp) ---------------------------------------------------
Expected<void> convertGRU(OnnxNode &node);
Expected<void> convertLSTM(OnnxNode &node);

// ---- Data movement and shapes (MovementConverters.cpp) ----------------------------------------
Expected<void> convertConcat(OnnxNode &node);
Expected<void> convertConstant(OnnxNode &node);
Expected<void> convertConstantOfShape(OnnxNode &node);
Expected<void> convertExpand(OnnxNode &node);
Expected<void> convertFlatten(OnnxNode &node);
Expected<void> convertGather(OnnxNode &node);
Expected<void> convertPad(OnnxNode &node);
Expected<void> convertRange(OnnxNode &node);
Expected<void> convertReshape(OnnxNode &node);
Expected<void> convertShape(OnnxNode &node);
Expected<void> convertSize(OnnxNode &node);
Expected<void> convertSlice(OnnxNode &node);
Expected<void> convertSplit(OnnxNode &node);
Expected<void> convertSqueeze(OnnxNode &node);
Expected<void> convertTranspose(OnnxNode &node);
Expected<void> convertTrilu(OnnxNode &node);
Expected<void> convertUnsqueeze(OnnxNode &node);

} // namespace kiln::onnx
