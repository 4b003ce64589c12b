// The gradient rule of conv2d: both operand gradients are conv2ds themselves,
// so they run on the convolution kernels every backend already has (implicit
// GEMM on the CPU and the GPU), at the forward's cost in multiply-adds.
//
// Notation: input x [N, C, H, W], filter w [O, C/g, KH, KW] (nhwc: [N, H, W, C]
// and [O, KH, KW, C/g]), result y [N, O, OH, OW], g groups, stride s, dilation
// d, padding [top, bottom, left, right]. y reads x at row oh*s - top + kh*d.
#include "ir/graph/gradients/WindowGradients.h"

#include "ir/graph/gradients/WindowGradientUtil.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::ir {

using window::ImageAxes;
using window::NodeBuilder;

namespace {

/// The sizes and attributes of one conv2d node.
struct ConvShape {
  ImageAxes axes;
  int64_t batch, channels, height, width;
  int64_t outChannels, outHeight, outWidth;
  int64_t groupChannels, kernelH, kernelW, groups;
  std::array<int64_t, 2> stride, dilation;
  std::array<int64_t, 4> padding;

  explicit ConvShape(const Node &node) : axes(ImageAxes::of(node)) {
    const Shape &input = node.operand(0)->type().shape, &filter = node.operand(1)->type().shape;
    bool nhwc = axes.nhwc;
    batch = input[0];
    channels = input[static_cast<size_t>(axes.channel)];
    auto [h, w] = axes.spatial(input);
    height = h;
    width = w;
    outChannels = filter[0];
    groupChannels = filter[nhwc ? 3 : 1];
    kernelH = filter[nhwc ? 1 : 2];
    kernelW = filter[nhwc ? 2 : 3];
    auto [oh, ow] = axes.spatial(node.type().shape);
    outHeight = oh;
    outWidth = ow;
    groups = getInt(node.attrs(), "groups");
    const auto &s = getInts(node.attrs(), "stride");
    const auto &d = getInts(node.attrs(), "dilation");
    const auto &p = getInts(node.attrs(), "padding");
    stride = {s[0], s[1]};
    dilation = {d[0], d[1]};
    padding = {p[0], p[1], p[2], p[3]};
  }
};

/// The node's attributes (layout, groups, accumulate, allow_tf32) with a new
/// window: the gradients accumulate exactly as the forward does.
AttrMap convAttrs(const Node &node, std::array<int64_t, 2> stride, std::array<int64_t, 2> dilation,
                  std::array<int64_t, 4> padding) {
  AttrMap attrs = node.attrs();
  attrs["stride"] = std::vector<int64_t>(stride.begin(), stride.end());
  attrs["dilation"] = std::vector<int64_t>(dilation.begin(), dilation.end());
  attrs["padding"] = std::vector<int64_t>(padding.begin(), padding.end());
  return attrs;
}

/// A rank-4 amount vector with `h` on the H axis and `w` on the W axis.
std::vector<int64_t> onSpatial(const ImageAxes &axes, int64_t h, int64_t w) {
  std::vector<int64_t> amounts(4, 0);
  amounts[static_cast<size_t>(axes.height)] = h;
  amounts[static_cast<size_t>(axes.width)] = w;
  return amounts;
}

/// The filter of the transposed convolution: per group, input and output
/// channels swapped and the window rotated by 180 degrees. nchw [O, C/g, KH, KW]
/// -> [C, O/g, KH, KW]; nhwc [O, KH, KW, C/g] -> [C, KH, KW, O/g]. Reversing the
/// flattened KH*KW axis with one gather flips both window axes at once.
Expected<Value *> flippedTransposedFilter(NodeBuilder &b, const ConvShape &conv, Value *filter) {
  int64_t taps = conv.kernelH * conv.kernelW;
  int64_t groupOut = conv.outChannels / conv.groups;
  bool nhwc = conv.axes.nhwc;
  int64_t tapAxis = nhwc ? 2 : 3;
  Shape grouped = nhwc ? Shape{conv.groups, groupOut, taps, conv.groupChannels}
                       : Shape{conv.groups, groupOut, conv.groupChannels, taps};
  KILN_TRY(Value * byGroup, b.reshape(filter, grouped));
  Value *flipped = byGroup;
  if (taps > 1) {
    std::vector<double> reversed;
    for (int64_t tap = taps - 1; tap >= 0; --tap)
      reversed.push_back(static_cast<double>(tap));
    KILN_TRY(Value * indices, b.constant(DType::I64, Shape{taps}, std::move(reversed)));
    KILN_TRY(flipped, b.op(OpKind::Gather, {byGroup, indices}, {{"axis", tapAxis}}));
  }
  // [g, C/g, O/g, taps] or [g, C/g, taps, O/g].
  KILN_TRY(Value * swapped, b.transpose(flipped, nhwc ? std::vector<int64_t>{0, 3, 2, 1}
                                                      : std::vector<int64_t>{0, 2, 1, 3}));
  return b.reshape(swapped, nhwc ? Shape{conv.channels, conv.kernelH, conv.kernelW, groupOut}
                                 : Shape{conv.channels, groupOut, conv.kernelH, conv.kernelW});
}

/// dL/dx[ih] = sum over (oh, kh) with oh*s - top + kh*d = ih of dy[oh] * w[kh]
/// (per channel pair). With dy dilated by the stride (p = oh*s) and the taps
/// reversed (kh' = KH-1-kh), that is a stride-1 conv2d reading the dilated
/// gradient at row ih + kh'*d - ((KH-1)*d - top): the same conv2d with padding
/// (KH-1)*d - top before and whatever makes H rows after, each cropped from the
/// gradient instead where negative. Its filter is small (KH x KW) and its
/// channel counts are the forward's swapped, so it costs the forward's
/// multiply-adds at stride 1; at stride s, s*s times that (the inserted zeros).
Expected<Value *> inputGradient(NodeBuilder &b, const Node &node, const ConvShape &conv,
                                Value *resultGradient) {
  const ImageAxes &axes = conv.axes;
  KILN_TRY(Value * dilated, window::dilateSpatial(b, axes, resultGradient, conv.stride));
  auto [dilatedH, dilatedW] = axes.spatial(dilated->type().shape);
  int64_t lowH = (conv.kernelH - 1) * conv.dilation[0] - conv.padding[0];
  int64_t lowW = (conv.kernelW - 1) * conv.dilation[1] - conv.padding[2];
  int64_t highH = conv.height + (conv.kernelH - 1) * conv.dilation[0] - lowH - dilatedH;
  int64_t highW = conv.width + (conv.kernelW - 1) * conv.dilation[1] - lowW - dilatedW;
  // Rows cropped away reach no input row; when nothing is left, no output
  // pixel's window touches the input on that axis and the gradient is zero.
  int64_t keptH = dilatedH + std::min<int64_t>(lowH, 0) + std::min<int64_t>(highH, 0);
  int64_t keptW = dilatedW + std::min<int64_t>(lowW, 0) + std::min<int64_t>(highW, 0);
  if (keptH <= 0 || keptW <= 0)
    return b.zeros(node.operand(0)->type());
  KILN_TRY(Value * cropped,
           b.padOrCrop(dilated,
                       onSpatial(axes, std::min<int64_t>(lowH, 0), std::min<int64_t>(lowW, 0)),
                       onSpatial(axes, std::min<int64_t>(highH, 0), std::min<int64_t>(highW, 0))));
  KILN_TRY(Value * filter, flippedTransposedFilter(b, conv, node.operand(1)));
  std::array<int64_t, 4> padding{std::max<int64_t>(lowH, 0), std::max<int64_t>(highH, 0),
                                 std::max<int64_t>(lowW, 0), std::max<int64_t>(highW, 0)};
  KILN_TRY(Value * gradient, b.op(OpKind::Conv2D, {cropped, filter},
                                  convAttrs(node, {1, 1}, conv.dilation, padding)));
  KILN_CHECK(gradient->type() == node.operand(0)->type(),
             "conv2d input gradient does not have the input's type");
  return gradient;
}

/// dL/dw[o, c, kh] = sum over (n, oh) of x[n, c, oh*s - top + kh*d] * dy[n, o, oh].
/// Swapping the batch and channel axes makes that a conv2d: "images" are the
/// C/g channels of a group, "channels" the N images (times g groups), the
/// "filter" is dy with O output channels, and it reads x at kh*d + oh*s - top,
/// so stride and dilation swap roles; its KH x KW output pixels are the taps.
///
/// Why this form: as an implicit GEMM it is M = (C/g)*KH*KW by N = O/g with a
/// reduction over N*OH*OW, exactly the forward's multiply-adds, reading x and
/// dy in place after one transposing copy of each; an explicit im2col would
/// write KH*KW copies of x first. For the seed CNN (batch 64, 3x3 valid) the
/// reductions are 64*26*26 down to 64*3*3 long and the GEMMs 9x32 to 576x64.
Expected<Value *> filterGradient(NodeBuilder &b, const Node &node, const ConvShape &conv,
                                 Value *resultGradient) {
  if (node.operand(0)->type().isSymbolic()) {
    // The batch would become the channels of the convolution below, and channels decide
    // a convolution's weights: they take static sizes.
    Error error(ErrorCode::Unsupported,
                fmt::format("conv2d: the filter gradient of a convolution whose input {} has a "
                            "symbolic batch is not built yet (it sums over the batch as a "
                            "convolution's channels, which take static sizes); specialize the "
                            "graph to train it (docs/dynamic-shapes.md)",
                            node.operand(0)->type().str()));
    if (node.location().known())
      error.at(node.location());
    return std::unexpected(std::move(error));
  }
  const ImageAxes &axes = conv.axes;
  bool nhwc = axes.nhwc;
  // Input rows past the last window's last tap take no gradient: crop them,
  // or pad at the bottom when the windows reach into the padding there.
  int64_t neededH = (conv.kernelH - 1) * conv.dilation[0] + (conv.outHeight - 1) * conv.stride[0] +
                    1 - conv.padding[0];
  int64_t neededW = (conv.kernelW - 1) * conv.dilation[1] + (conv.outWidth - 1) * conv.stride[1] +
                    1 - conv.padding[2];
  int64_t keptH = std::clamp<int64_t>(neededH, 1, conv.height);
  int64_t keptW = std::clamp<int64_t>(neededW, 1, conv.width);
  KILN_TRY(Value * input, b.padOrCrop(node.operand(0), onSpatial(axes, 0, 0),
                                      onSpatial(axes, keptH - conv.height, keptW - conv.width)));
  int64_t groupChannels = conv.groupChannels, groups = conv.groups, batch = conv.batch;
  // [N, C, H, W] -> [N, g, C/g, H, W] -> [C/g, g, N, H, W] -> [C/g, g*N, H, W];
  // nhwc [N, H, W, C] -> [N, H, W, g, C/g] -> [C/g, H, W, g, N] -> [C/g, H, W, g*N].
  Shape split = nhwc ? Shape{batch, keptH, keptW, groups, groupChannels}
                     : Shape{batch, groups, groupChannels, keptH, keptW};
  KILN_TRY(Value * splitInput, b.reshape(input, split));
  KILN_TRY(Value * swappedInput,
           b.transpose(splitInput, nhwc ? std::vector<int64_t>{4, 1, 2, 3, 0}
                                        : std::vector<int64_t>{2, 1, 0, 3, 4}));
  KILN_TRY(Value * images,
           b.reshape(swappedInput, nhwc ? Shape{groupChannels, keptH, keptW, groups * batch}
                                        : Shape{groupChannels, groups * batch, keptH, keptW}));
  // dy [N, O, OH, OW] -> [O, N, OH, OW]; nhwc [N, OH, OW, O] -> [O, OH, OW, N].
  std::vector<int64_t> swapBatch =
      nhwc ? std::vector<int64_t>{3, 1, 2, 0} : std::vector<int64_t>{1, 0, 2, 3};
  KILN_TRY(Value * taps, b.transpose(resultGradient, swapBatch));
  std::array<int64_t, 4> padding{conv.padding[0], std::max<int64_t>(neededH - keptH, 0),
                                 conv.padding[2], std::max<int64_t>(neededW - keptW, 0)};
  KILN_TRY(Value * perTap, b.op(OpKind::Conv2D, {images, taps},
                                convAttrs(node, conv.dilation, conv.stride, padding)));
  // When every window ends in the top padding (needed < 1) the kept input row
  // makes more than KH output rows; the first KH are the taps.
  auto [tapsH, tapsW] = axes.spatial(perTap->type().shape);
  KILN_CHECK(tapsH >= conv.kernelH && tapsW >= conv.kernelW,
             "conv2d filter gradient has fewer taps than the filter");
  KILN_TRY(Value * cropped,
           b.padOrCrop(perTap, onSpatial(axes, 0, 0),
                       onSpatial(axes, conv.kernelH - tapsH, conv.kernelW - tapsW)));
  // [C/g, O, KH, KW] -> [O, C/g, KH, KW]; nhwc [C/g, KH, KW, O] -> [O, KH, KW, C/g].
  KILN_TRY(Value * gradient, b.transpose(cropped, swapBatch));
  KILN_CHECK(gradient->type() == node.operand(1)->type(),
             "conv2d filter gradient does not have the filter's type");
  return gradient;
}

} // namespace

Expected<std::vector<Value *>> gradientConv2D(Graph &graph, const Node &node,
                                              Value *resultGradient) {
  KILN_TRY_VOID(window::checkResultGradient(node, resultGradient));
  NodeBuilder b(graph, node);
  ConvShape conv(node);
  KILN_TRY(Value * input, inputGradient(b, node, conv, resultGradient));
  KILN_TRY(Value * filter, filterGradient(b, node, conv, resultGradient));
  return std::vector<Value *>{input, filter};
}

} // namespace kiln::ir
