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

// The converters of the ops that are one DSL function: the registry's rows name them as
// convertUnaryOp<relu>, convertBinaryOp<add> and convertVariadicOp<maximum>.
template <Tensor (*Op)(Tensor, std::source_location)>
Expected<void> convertUnaryOp(OnnxNode &node) {
  return convertUnary(node, [](Tensor x) { return Op(x, std::source_location::current()); });
}
template <Tensor (*Op)(Tensor, Tensor, std::source_location)>
Expected<void> convertBinaryOp(OnnxNode &node) {
  KILN_TRY(Tensor a, node.input(0));
  KILN_TRY(Tensor b, node.input(1));
  node.setOutput(0, Op(a, b, std::source_location::current()));
  return {};
}
/// Max, Min and Sum take one or more operands.
template <Tensor (*Op)(Tensor, Tensor, std::source_location)>
Expected<void> convertVariadicOp(OnnxNode &node) {
  KILN_TRY(Tensor result, node.input(0));
  for (size_t i = 1; i < node.numInputs(); ++i) {
    KILN_TRY(Tensor next, node.input(i));
    result = Op(result, next, std::source_location::current());
  }
  node.setOutput(0, result);
  return {};
}

// ---- Elementwise (ElementwiseConverters.cpp) --------------------------------------------------
Expected<void> convertCast(OnnxNode &node);
Expected<void> convertClip(OnnxNode &node);
Expected<void> convertDropout(OnnxNode &node);
Expected<void> convertElu(OnnxNode &node);
Expected<void> convertHardSigmoid(OnnxNode &node);
Expected<void> convertIdentity(OnnxNode &node);
Expected<void> convertLeakyRelu(OnnxNode &node);
Expected<void> convertPow(OnnxNode &node);
Expected<void> convertReciprocal(OnnxNode &node);
Expected<void> convertSoftplus(OnnxNode &node);
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
