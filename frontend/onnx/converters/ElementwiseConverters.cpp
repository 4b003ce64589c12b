// Converters of ONNX's elementwise ops and activations.
#include "frontend/onnx/converters/Converters.h"

#include "frontend/onnx/TensorProtoReading.h"

#include <fmt/format.h>

#include <limits>

namespace kiln::onnx {

namespace {

template <typename Fn> Expected<void> convertBinary(OnnxNode &node, Fn fn) {
  KILN_TRY(Tensor a, node.input(0));
  KILN_TRY(Tensor b, node.input(1));
  node.setOutput(0, fn(a, b));
  return {};
}

// Max, Min and Sum take one or more operands.
template <typename Fn> Expected<void> convertVariadic(OnnxNode &node, Fn fn) {
  KILN_TRY(Tensor result, node.input(0));
  for (size_t i = 1; i < node.numInputs(); ++i) {
    KILN_TRY(Tensor next, node.input(i));
    result = fn(result, next);
  }
  node.setOutput(0, result);
  return {};
}

} // namespace

Expected<void> convertAbs(OnnxNode &node) { return convertUnary(node, [](Tensor x) { return abs(x); }); }
Expected<void> convertCos(OnnxNode &node) { return convertUnary(node, [](Tensor x) { return cos(x); }); }
Expected<void> convertErf(OnnxNode &node) { return convertUnary(node, [](Tensor x) { return erf(x); }); }
Expected<void> convertExp(OnnxNode &node) { return convertUnary(node, [](Tensor x) { return exp(x); }); }
Expected<void> convertLog(OnnxNode &node) { return convertUnary(node, [](Tensor x) { return log(x); }); }
Expected<void> convertNeg(OnnxNode &node) { return convertUnary(node, [](Tensor x) { return neg(x); }); }
Expected<void> convertNot(OnnxNode &node) { return convertUnary(node, [](Tensor x) { return logicalNot(x); }); }
Expected<void> convertRelu(OnnxNode &node) { return convertUnary(node, [](Tensor x) { return relu(x); }); }
Expected<void> convertSigmoid(OnnxNode &node) { return convertUnary(node, [](Tensor x) { return sigmoid(x); }); }
Expected<void> convertSin(OnnxNode &node) { return convertUnary(node, [](Tensor x) { return sin(x); }); }
Expected<void> convertSqrt(OnnxNode &node) { return convertUnary(node, [](Tensor x) { return sqrt(x); }); }
Expected<void> convertTanh(OnnxNode &node) { return convertUnary(node, [](Tensor x) { return tanh(x); }); }
Expected<void> convertIdentity(OnnxNode &node) { return convertUnary(node, [](Tensor x) { return x; }); }

Expected<void> convertReciprocal(OnnxNode &node) {
  return convertUnary(node, [](Tensor x) { return div(scalarLike(x, 1.0), x); });
}

// ONNX's activations map onto the DSL's (frontend/ActivationOps.cpp), with ONNX's defaults.
Expected<void> convertSoftplus(OnnxNode &node) {
  // ONNX's Softplus has no threshold: log(1 + exp(x)) everywhere (the DSL's stable form).
  return convertUnary(node, [](Tensor x) {
    return softplus(x, 1.0, std::numeric_limits<double>::infinity());
  });
}

Expected<void> convertHardSigmoid(OnnxNode &node) {
  double alpha = node.floatAttr("alpha", 0.2), beta = node.floatAttr("beta", 0.5);
  return convertUnary(node, [&](Tensor x) { return hardSigmoid(x, alpha, beta); });
}

Expected<void> convertHardSwish(OnnxNode &node) {
  return convertUnary(node, [](Tensor x) { return hardSwish(x); });
}

Expected<void> convertLeakyRelu(OnnxNode &node) {
  double alpha = node.floatAttr("alpha", 0.01);
  return convertUnary(node, [&](Tensor x) { return leakyRelu(x, alpha); });
}

Expected<void> convertElu(OnnxNode &node) {
  double alpha = node.floatAttr("alpha", 1.0);
  return convertUnary(node, [&](Tensor x) { return elu(x, alpha); });
}

Expected<void> convertAdd(OnnxNode &node) { return convertBinary(node, [](Tensor a, Tensor b) { return add(a, b); }); }
Expected<void> convertSub(OnnxNode &node) { return convertBinary(node, [](Tensor a, Tensor b) { return sub(a, b); }); }
Expected<void> convertMul(OnnxNode &node) { return convertBinary(node, [](Tensor a, Tensor b) { return mul(a, b); }); }
Expected<void> convertDiv(OnnxNode &node) { return convertBinary(node, [](Tensor a, Tensor b) { return div(a, b); }); }
Expected<void> convertAnd(OnnxNode &node) { return convertBinary(node, [](Tensor a, Tensor b) { return logicalAnd(a, b); }); }
Expected<void> convertOr(OnnxNode &node) { return convertBinary(node, [](Tensor a, Tensor b) { return logicalOr(a, b); }); }
Expected<void> convertEqual(OnnxNode &node) { return convertBinary(node, [](Tensor a, Tensor b) { return eq(a, b); }); }
Expected<void> convertLess(OnnxNode &node) { return convertBinary(node, [](Tensor a, Tensor b) { return lt(a, b); }); }
Expected<void> convertLessOrEqual(OnnxNode &node) { return convertBinary(node, [](Tensor a, Tensor b) { return le(a, b); }); }
Expected<void> convertGreater(OnnxNode &node) { return convertBinary(node, [](Tensor a, Tensor b) { return gt(a, b); }); }
Expected<void> convertGreaterOrEqual(OnnxNode &node) { return convertBinary(node, [](Tensor a, Tensor b) { return ge(a, b); }); }
Expected<void> convertMax(OnnxNode &node) { return convertVariadic(node, [](Tensor a, Tensor b) { return maximum(a, b); }); }
Expected<void> convertMin(OnnxNode &node) { return convertVariadic(node, [](Tensor a, Tensor b) { return minimum(a, b); }); }
Expected<void> convertSum(OnnxNode &node) { return convertVariadic(node, [](Tensor a, Tensor b) { return add(a, b); }); }

Expected<void> convertWhere(OnnxNode &node) {
  KILN_TRY(Tensor condition, node.input(0));
  KILN_TRY(Tensor a, node.input(1));
  KILN_TRY(Tensor b, node.input(2));
  node.setOutput(0, where(condition, a, b));
  return {};
}

// ONNX lets the exponent's type differ from the base's; kiln's pow takes one type.
Expected<void> convertPow(OnnxNode &node) {
  KILN_TRY(Tensor base, node.input(0));
  KILN_TRY(Tensor exponent, node.input(1));
  if (exponent.dtype() != base.dtype())
    exponent = cast(exponent, base.dtype());
  node.setOutput(0, pow(base, exponent));
  return {};
}

Expected<void> convertCast(OnnxNode &node) {
  int64_t to = node.intAttr("to", 0);
  std::optional<DType> dtype = dtypeFromOnnx(static_cast<int32_t>(to));
  if (!dtype) {
    node.reject(fmt::format("attribute to = {}", onnxTypeName(static_cast<int32_t>(to))));
    return node.rejection();
  }
  return convertUnary(node, [&](Tensor x) { return cast(x, *dtype); });
}

// min and max are optional inputs (opset 11 on); kiln's clamp takes them as numbers.
Expected<void> convertClip(OnnxNode &node) {
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  for (size_t index : {1u, 2u}) {
    if (!node.hasInput(index))
      continue;
    KILN_TRY(const HostTensor *bound, node.constantInput(index, index == 1 ? "min" : "max"));
    if (bound->numElements() != 1)
      return node.fail(ErrorCode::ShapeMismatch,
                       fmt::format("input {} must be a scalar, not {}", index, bound->typeStr()));
    (index == 1 ? low : high) = bound->getDouble(0);
  }
  return convertUnary(node, [&](Tensor x) { return clamp(x, low, high); });
}

// In inference Dropout is the identity; its mask, when asked for, is all true.
Expected<void> convertDropout(OnnxNode &node) {
  if (node.hasInput(2)) {
    KILN_TRY(const HostTensor *training, node.constantInput(2, "training_mode"));
    if (training->numElements() == 1 && training->getDouble(0) != 0.0) {
      node.reject("training_mode = true (kiln imports models for inference)");
      return node.rejection();
    }
  }
  KILN_TRY(Tensor x, node.input(0));
  node.setOutput(0, x);
  if (node.hasOutput(1))
    node.setOutput(1, constant(node.graph(), 1.0, x.shape(), DType::Bool));
  return {};
}

} // namespace kiln::onnx
