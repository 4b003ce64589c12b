// Converters of ONNX's elementwise ops and activations.
#include "frontend/onnx/converters/Converters.h"

#include "frontend/onnx/TensorProtoReading.h"

#include <fmt/format.h>

#include <limits>

namespace kiln::onnx {

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

Expected<void> convertLeakyRelu(OnnxNode &node) {
  double alpha = node.floatAttr("alpha", 0.01);
  return convertUnary(node, [&](Tensor x) { return leakyRelu(x, alpha); });
}

Expected<void> convertElu(OnnxNode &node) {
  double alpha = node.floatAttr("alpha", 1.0);
  return convertUnary(node, [&](Tensor x) { return elu(x, alpha); });
}

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
  if (node.hasOutput(1)) {
    KILN_TRY(Shape shape, node.staticShape(x));
    node.setOutput(1, constant(node.graph(), 1.0, shape, DType::Bool));
  }
  return {};
}

} // namespace kiln::onnx
