// Converters of ONNX's contractions and window ops: Conv, Gemm, MatMul and pooling. kiln's
// windows are 2-D; 1-D ones run as 2-D with a height of one.
#include "frontend/onnx/converters/Converters.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::onnx {

namespace {

// The window attributes ONNX's Conv and pooling ops share, read for `spatialRank` (1 or 2)
// spatial axes and widened to kiln's 2-D form.
struct Window {
  std::array<int64_t, 2> kernel = {1, 1};
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> dilation = {1, 1};
  Padding padding = Padding::valid();
};

std::array<int64_t, 2> widen(const std::vector<int64_t> &values, int64_t fill) {
  if (values.size() == 1)
    return {1, values[0]};
  return {values.size() > 0 ? values[0] : fill, values.size() > 1 ? values[1] : fill};
}

Expected<Window> readWindow(OnnxNode &node, int64_t spatialRank,
                            std::vector<int64_t> kernelShape) {
  Window window;
  auto sized = [&](std::string_view name, std::vector<int64_t> values,
                   size_t count) -> Expected<std::vector<int64_t>> {
    if (values.empty())
      values.assign(count, name == "pads" ? 0 : 1);
    if (values.size() != count)
      return node.fail(ErrorCode::InvalidArgument,
                       fmt::format("attribute {} has {} values, expected {}", name,
                                   values.size(), count));
    return values;
  };
  size_t rank = static_cast<size_t>(spatialRank);
  KILN_TRY(auto kernel, sized("kernel_shape", node.intsAttr("kernel_shape", kernelShape), rank));
  KILN_TRY(auto strides, sized("strides", node.intsAttr("strides"), rank));
  KILN_TRY(auto dilations, sized("dilations", node.intsAttr("dilations"), rank));
  KILN_TRY(auto pads, sized("pads", node.intsAttr("pads"), 2 * rank));
  window.kernel = widen(kernel, 1);
  window.stride = widen(strides, 1);
  window.dilation = widen(dilations, 1);
  // ONNX orders pads as [x1_begin, x2_begin, x1_end, x2_end]; kiln as [top, bottom, left, right].
  std::array<int64_t, 4> explicitPads =
      spatialRank == 1 ? std::array<int64_t, 4>{0, 0, pads[0], pads[1]}
                       : std::array<int64_t, 4>{pads[0], pads[2], pads[1], pads[3]};
  std::string autoPad = node.stringAttr("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    window.padding = Padding::explicitPads(explicitPads[0], explicitPads[1], explicitPads[2],
                                           explicitPads[3]);
  } else if (autoPad == "VALID") {
    window.padding = Padding::valid();
  } else if (autoPad == "SAME_UPPER") {
    window.padding = Padding::same();
  } else {
    node.reject(fmt::format("attribute auto_pad = '{}'", autoPad));
  }
  return window;
}

// 1-D windows run as 2-D: [N, C, L] -> [N, C, 1, L].
Expected<Tensor> imageInput(OnnxNode &node, size_t index, int64_t &spatialRank) {
  KILN_TRY(Tensor x, node.input(index));
  spatialRank = x.rank() - 2;
  if (spatialRank != 1 && spatialRank != 2) {
    node.reject(fmt::format("{}-D input {} (kiln has 1-D and 2-D windows)", spatialRank, x.str()));
    return node.rejection();
  }
  return spatialRank == 1 ? unsqueeze(x, {2}) : x;
}

Tensor imageOutput(Tensor y, int64_t spatialRank) {
  return spatialRank == 1 ? squeeze(y, {2}) : y;
}

Expected<void> convertPool(OnnxNode &node, bool isMax) {
  int64_t spatialRank = 0;
  KILN_TRY(Tensor x, imageInput(node, 0, spatialRank));
  if (!node.hasAttr("kernel_shape"))
    return node.fail(ErrorCode::FormatError, "attribute kernel_shape is missing");
  KILN_TRY(Window window, readWindow(node, spatialRank, {}));
  if (window.dilation != std::array<int64_t, 2>{1, 1})
    node.reject(fmt::format("attribute dilations = [{}]", fmt::join(window.dilation, ",")));
  if (isMax && node.intAttr("storage_order", 0) != 0)
    node.reject("attribute storage_order = 1");
  if (isMax && node.hasOutput(1))
    node.reject("output Indices");
  if (node.rejectedAny())
    return node.rejection();
  Pool2DOptions options{.kernel = window.kernel,
                        .stride = window.stride,
                        .padding = window.padding,
                        .layout = Layout::NCHW,
                        .countIncludePad = node.intAttr("count_include_pad", 0) != 0,
                        .ceilMode = node.intAttr("ceil_mode", 0) != 0};
  Tensor y = isMax ? maxPool2d(x, options) : avgPool2d(x, options);
  node.setOutput(0, imageOutput(y, spatialRank));
  return {};
}

} // namespace

Expected<void> convertConv(OnnxNode &node) {
  int64_t spatialRank = 0;
  KILN_TRY(Tensor x, imageInput(node, 0, spatialRank));
  KILN_TRY(Tensor filter, node.input(1));
  if (filter.rank() != spatialRank + 2)
    return node.fail(ErrorCode::ShapeMismatch,
                     fmt::format("filter {} does not fit input {}", filter.str(), x.str()));
  if (spatialRank == 1)
    filter = unsqueeze(filter, {2});
  KILN_TRY(Window window, readWindow(node, spatialRank, {filter.dim(2), filter.dim(3)}));
  if (node.rejectedAny())
    return node.rejection();
  Conv2DOptions options{.stride = window.stride,
                        .padding = window.padding,
                        .dilation = window.dilation,
                        .groups = node.intAttr("group", 1),
                        .layout = Layout::NCHW};
  Tensor y = conv2d(x, filter, options);
  if (node.hasInput(2)) {
    KILN_TRY(Tensor bias, node.input(2));
    y = y + reshape(bias, {1, -1, 1, 1});
  }
  node.setOutput(0, imageOutput(y, spatialRank));
  return {};
}

Expected<void> convertMaxPool(OnnxNode &node) { return convertPool(node, true); }
Expected<void> convertAveragePool(OnnxNode &node) { return convertPool(node, false); }

Expected<void> convertGlobalAveragePool(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  if (x.rank() != 4) {
    node.reject(fmt::format("input {} (kiln's global_avg_pool takes NCHW)", x.str()));
    return node.rejection();
  }
  node.setOutput(0, globalAvgPool(x));
  return {};
}

Expected<void> convertGlobalMaxPool(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  std::vector<int64_t> spatial;
  for (int64_t axis = 2; axis < x.rank(); ++axis)
    spatial.push_back(axis);
  node.setOutput(0, reduceMax(x, spatial, /*keepdims=*/true));
  return {};
}

// NumPy matmul: a 1-D operand gains a unit axis (before for a, after for b) that the result
// then drops.
Expected<void> convertMatMul(OnnxNode &node) {
  KILN_TRY(Tensor a, node.input(0));
  KILN_TRY(Tensor b, node.input(1));
  bool vectorA = a.rank() == 1, vectorB = b.rank() == 1;
  if (vectorA)
    a = unsqueeze(a, {0});
  if (vectorB)
    b = unsqueeze(b, {1});
  Tensor y = matmul(a, b);
  if (vectorB)
    y = squeeze(y, {-1});
  if (vectorA)
    y = squeeze(y, {vectorB ? -1 : -2});
  node.setOutput(0, y);
  return {};
}

// alpha * A' @ B' + beta * C, C broadcast to the result.
Expected<void> convertGemm(OnnxNode &node) {
  KILN_TRY(Tensor a, node.input(0));
  KILN_TRY(Tensor b, node.input(1));
  double alpha = node.floatAttr("alpha", 1.0), beta = node.floatAttr("beta", 1.0);
  Tensor y = matmul(a, b,
                    {.transposeA = node.intAttr("transA", 0) != 0,
                     .transposeB = node.intAttr("transB", 0) != 0});
  if (alpha != 1.0)
    y = y * alpha;
  if (node.hasInput(2) && beta != 0.0) {
    KILN_TRY(Tensor c, node.input(2));
    y = y + (beta == 1.0 ? c : c * beta);
  }
  node.setOutput(0, y);
  return {};
}

} // namespace kiln::onnx
