// Converters of ONNX's reductions and normalizations.
#include "frontend/onnx/converters/Converters.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::onnx {

Expected<int64_t> normalizeAxis(OnnxNode &node, int64_t axis, int64_t rank,
                                std::string_view what) {
  int64_t resolved = axis < 0 ? axis + rank : axis;
  if (resolved < 0 || resolved >= std::max<int64_t>(rank, 1))
    return node.fail(ErrorCode::InvalidArgument,
                     fmt::format("{} {} is out of range for rank {}", what, axis, rank));
  return resolved;
}

namespace {

using ReduceFn = Tensor (*)(Tensor, std::vector<int64_t>, bool, std::source_location);

// `axes` empty reduces every axis (unless noop_with_empty_axes, where it is the identity).
Expected<void> convertReduce(OnnxNode &node, ReduceFn reduce, std::vector<int64_t> axes) {
  KILN_TRY(Tensor x, node.input(0));
  bool keepdims = node.intAttr("keepdims", 1) != 0;
  if (axes.empty()) {
    if (node.intAttr("noop_with_empty_axes", 0) != 0) {
      node.setOutput(0, x);
      return {};
    }
    for (int64_t axis = 0; axis < x.rank(); ++axis)
      axes.push_back(axis);
  }
  node.setOutput(0, reduce(x, axes, keepdims, std::source_location::current()));
  return {};
}

// ONNX's ReduceMean/Max/Min/Prod take axes as an attribute at opset 17.
Expected<void> convertReduceAttr(OnnxNode &node, ReduceFn reduce) {
  return convertReduce(node, reduce, node.intsAttr("axes"));
}

Expected<void> convertArgReduce(OnnxNode &node, bool isMax) {
  if (node.intAttr("select_last_index", 0) != 0) {
    node.reject("attribute select_last_index = 1");
    return node.rejection();
  }
  KILN_TRY(Tensor x, node.input(0));
  int64_t axis = node.intAttr("axis", 0);
  bool keepdims = node.intAttr("keepdims", 1) != 0;
  node.setOutput(0, isMax ? argmax(x, axis, keepdims) : argmin(x, axis, keepdims));
  return {};
}

} // namespace

Expected<void> convertReduceMean(OnnxNode &node) { return convertReduceAttr(node, reduceMean); }
Expected<void> convertReduceMax(OnnxNode &node) { return convertReduceAttr(node, reduceMax); }
Expected<void> convertReduceMin(OnnxNode &node) { return convertReduceAttr(node, reduceMin); }
Expected<void> convertReduceProd(OnnxNode &node) { return convertReduceAttr(node, reduceProd); }

Expected<void> convertReduceSum(OnnxNode &node) {
  std::vector<int64_t> axes;
  if (node.hasInput(1)) {
    KILN_TRY(axes, node.intsInput(1, "axes"));
  }
  return convertReduce(node, reduceSum, axes);
}

Expected<void> convertArgMax(OnnxNode &node) { return convertArgReduce(node, true); }
Expected<void> convertArgMin(OnnxNode &node) { return convertArgReduce(node, false); }

Expected<void> convertSoftmax(OnnxNode &node) {
  int64_t axis = node.intAttr("axis", -1);
  return convertUnary(node, [&](Tensor x) { return softmax(x, axis); });
}

Expected<void> convertLogSoftmax(OnnxNode &node) {
  int64_t axis = node.intAttr("axis", -1);
  return convertUnary(node, [&](Tensor x) { return logSoftmax(x, axis); });
}

Expected<void> convertBatchNormalization(OnnxNode &node) {
  if (node.intAttr("training_mode", 0) != 0) {
    node.reject("attribute training_mode = 1 (kiln imports models for inference)");
    return node.rejection();
  }
  KILN_TRY(Tensor x, node.input(0));
  KILN_TRY(Tensor scale, node.input(1));
  KILN_TRY(Tensor bias, node.input(2));
  KILN_TRY(Tensor mean, node.input(3));
  KILN_TRY(Tensor variance, node.input(4));
  node.setOutput(0, batchNorm(x, scale, bias, mean, variance, /*axis=*/1,
                              node.floatAttr("epsilon", 1e-5)));
  return {};
}

// Normalizes over [axis, rank); Scale and B broadcast to those axes.
Expected<void> convertLayerNormalization(OnnxNode &node) {
  if (node.hasOutput(1) || node.hasOutput(2)) {
    node.reject("outputs Mean and InvStdDev");
    return node.rejection();
  }
  KILN_TRY(Tensor x, node.input(0));
  KILN_TRY(int64_t axis, normalizeAxis(node, node.intAttr("axis", -1), x.rank(), "axis"));
  Shape normalized;
  for (int64_t d = axis; d < x.rank(); ++d) {
    KILN_TRY(int64_t size, node.staticDim(x, d));
    normalized.push_back(size);
  }
  KILN_TRY(Tensor scale, node.input(1));
  if (scale.shape() != normalized)
    scale = broadcastTo(scale, normalized);
  Tensor bias;
  if (node.hasInput(2)) {
    KILN_TRY(bias, node.input(2));
    if (bias.shape() != normalized)
      bias = broadcastTo(bias, normalized);
  } else {
    bias = constant(node.graph(), 0.0, normalized, x.dtype());
  }
  node.setOutput(0, layerNorm(x, scale, bias, axis, node.floatAttr("epsilon", 1e-5)));
  return {};
}

} // namespace kiln::onnx
