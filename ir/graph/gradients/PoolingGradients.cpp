// Gradient rules of max_pool2d and avg_pool2d. Both turn the result gradient
// into one tensor per window tap (what flows from each output pixel to the
// input pixel under that tap) and let scatterWindowTaps put the taps back in
// place, which needs only slices, pads, concats and reshapes: when the kernel
// does not exceed the stride (the usual 2x2/2 pool) that is one interleave and
// no add; overlapping windows add ceil(K/s)^2 shifted copies.
#include "ir/graph/gradients/WindowGradients.h"

#include "ir/graph/gradients/WindowGradientUtil.h"

#include <algorithm>

namespace kiln::ir {

using window::ImageAxes;
using window::NodeBuilder;
using window::WindowGeometry;

namespace {

WindowGeometry poolGeometry(const Node &node) {
  const auto &kernel = getInts(node.attrs(), "kernel");
  const auto &stride = getInts(node.attrs(), "stride");
  const auto &padding = getInts(node.attrs(), "padding");
  WindowGeometry geometry;
  geometry.kernel = {kernel[0], kernel[1]};
  geometry.stride = {stride[0], stride[1]};
  geometry.padding = {padding[0], padding[1], padding[2], padding[3]};
  return geometry;
}

/// How many of the window's taps along one axis lie inside the input, for
/// output index `out`: the window starts at out * stride - padBefore.
int64_t tapsInside(int64_t out, int64_t kernel, int64_t stride, int64_t padBefore, int64_t size) {
  int64_t begin = out * stride - padBefore;
  return std::min(begin + kernel, size) - std::max<int64_t>(begin, 0);
}

/// A bool constant telling, for each output index along H (as [OH, 1] or
/// [OH, 1, 1], to broadcast against the result) or along W ([OW] or [OW, 1]),
/// whether tap `tap` of its window lies inside the input; nullptr when it
/// always does.
Expected<Value *> tapInsideMask(NodeBuilder &b, const ImageAxes &axes, bool alongHeight,
                                int64_t outSize, int64_t tap, int64_t stride, int64_t padBefore,
                                int64_t size) {
  std::vector<double> inside;
  bool everywhere = true;
  for (int64_t out = 0; out < outSize; ++out) {
    int64_t position = out * stride + tap - padBefore;
    bool isInside = position >= 0 && position < size;
    everywhere = everywhere && isInside;
    inside.push_back(isInside ? 1.0 : 0.0);
  }
  if (everywhere)
    return nullptr;
  // Trailing size-1 axes up to the last one: W is last in nchw, C follows W in nhwc.
  int64_t trailing = (alongHeight ? 1 : 0) + (axes.nhwc ? 1 : 0);
  Shape shape{outSize};
  shape.insert(shape.end(), static_cast<size_t>(trailing), 1);
  return b.constant(DType::Bool, std::move(shape), std::move(inside));
}

} // namespace

Expected<std::vector<Value *>> gradientMaxPool2D(Graph &graph, const Node &node,
                                                 Value *resultGradient) {
  // Tap by tap in row-major window order, a tap is chosen where it equals the
  // window's maximum (the forward result), lies inside the input, and no
  // earlier tap was chosen; it then carries the result gradient, every other
  // tap zero. A NaN maximum equals nothing, so its window passes no gradient.
  KILN_TRY_VOID(window::checkResultGradient(node, resultGradient));
  NodeBuilder b(graph, node);
  ImageAxes axes = ImageAxes::of(node);
  WindowGeometry geometry = poolGeometry(node);
  Value *input = node.operand(0);
  // The node is one of `graph`'s (mutable) nodes; the rule only adds uses of its result.
  Value *maximum = const_cast<Node &>(node).result();
  auto [height, width] = axes.spatial(input->type().shape);
  auto [outHeight, outWidth] = axes.spatial(node.type().shape);
  auto [strideH, strideW] = geometry.stride;

  // Padding with zeros is harmless: the inside masks keep padding from being chosen.
  std::vector<int64_t> low(4, 0), high(4, 0);
  low[static_cast<size_t>(axes.height)] = geometry.padding[0];
  high[static_cast<size_t>(axes.height)] = geometry.padding[1];
  low[static_cast<size_t>(axes.width)] = geometry.padding[2];
  high[static_cast<size_t>(axes.width)] = geometry.padding[3];
  KILN_TRY(Value * padded, b.padOrCrop(input, low, high));
  KILN_TRY(Value * zero, b.scalar(0.0, node.type().dtype));

  std::vector<Value *> taps;
  Value *taken = nullptr; // where an earlier tap was chosen
  int64_t kernelH = geometry.kernel[0], kernelW = geometry.kernel[1];
  for (int64_t kh = 0; kh < kernelH; ++kh) {
    for (int64_t kw = 0; kw < kernelW; ++kw) {
      const Shape &paddedShape = padded->type().shape;
      std::vector<int64_t> starts(4, 0), stops(paddedShape), steps(4, 1);
      auto along = [&](int64_t axis, int64_t tap, int64_t outSize, int64_t stride) {
        starts[static_cast<size_t>(axis)] = tap;
        stops[static_cast<size_t>(axis)] = tap + (outSize - 1) * stride + 1;
        steps[static_cast<size_t>(axis)] = stride;
      };
      along(axes.height, kh, outHeight, strideH);
      along(axes.width, kw, outWidth, strideW);
      KILN_TRY(Value * candidates, b.op(OpKind::Slice, {padded},
                                        {{"starts", starts}, {"stops", stops}, {"steps", steps}}));
      KILN_TRY(Value * isMaximum, b.op(OpKind::Eq, {candidates, maximum}));
      KILN_TRY(Value * rowsInside,
               tapInsideMask(b, axes, true, outHeight, kh, strideH, geometry.padding[0], height));
      KILN_TRY(Value * columnsInside,
               tapInsideMask(b, axes, false, outWidth, kw, strideW, geometry.padding[2], width));
      for (Value *inside : {rowsInside, columnsInside})
        if (inside) {
          KILN_TRY(isMaximum, b.op(OpKind::And, {isMaximum, inside}));
        }
      Value *chosen = isMaximum;
      bool lastTap = kh == kernelH - 1 && kw == kernelW - 1;
      if (taken) {
        KILN_TRY(Value * unclaimed, b.op(OpKind::Not, {taken}));
        KILN_TRY(chosen, b.op(OpKind::And, {isMaximum, unclaimed}));
        if (!lastTap) {
          KILN_TRY(taken, b.op(OpKind::Or, {taken, isMaximum}));
        }
      } else {
        taken = isMaximum;
      }
      KILN_TRY(Value * tap, b.op(OpKind::Where, {chosen, resultGradient, zero}));
      taps.push_back(tap);
    }
  }
  KILN_TRY(Value * inputGradient,
           window::scatterWindowTaps(b, axes, taps, geometry, input->type()));
  return std::vector<Value *>{inputGradient};
}

Expected<std::vector<Value *>> gradientAvgPool2D(Graph &graph, const Node &node,
                                                 Value *resultGradient) {
  // Every tap carries the result gradient over the window's count; the
  // division happens once per output pixel, before the scatter, in f64 for f64
  // and in f32 for narrower floats (a count like 289 is not exact in bf16).
  KILN_TRY_VOID(window::checkResultGradient(node, resultGradient));
  NodeBuilder b(graph, node);
  ImageAxes axes = ImageAxes::of(node);
  WindowGeometry geometry = poolGeometry(node);
  Value *input = node.operand(0);
  auto [height, width] = axes.spatial(input->type().shape);
  auto [outHeight, outWidth] = axes.spatial(node.type().shape);
  auto [kernelH, kernelW] = geometry.kernel;
  auto [strideH, strideW] = geometry.stride;
  DType dtype = node.type().dtype;
  DType compute = dtype == DType::F64 ? DType::F64 : DType::F32;

  // Per output pixel the count is rowsInside(oh) * columnsInside(ow); one
  // count for all when padding is counted or no window reaches the padding.
  std::vector<double> counts;
  bool uniform = true;
  for (int64_t oh = 0; oh < outHeight; ++oh)
    for (int64_t ow = 0; ow < outWidth; ++ow) {
      int64_t count = kernelH * kernelW;
      if (!getBool(node.attrs(), "count_include_pad"))
        count = tapsInside(oh, kernelH, strideH, geometry.padding[0], height) *
                tapsInside(ow, kernelW, strideW, geometry.padding[2], width);
      uniform = uniform && count == kernelH * kernelW;
      counts.push_back(static_cast<double>(count));
    }
  Value *count = nullptr;
  if (uniform) {
    KILN_TRY(count, b.scalar(static_cast<double>(kernelH * kernelW), compute));
  } else {
    Shape shape = axes.nhwc ? Shape{outHeight, outWidth, 1} : Shape{outHeight, outWidth};
    KILN_TRY(count, b.constant(compute, std::move(shape), std::move(counts)));
  }
  KILN_TRY(Value * wide, b.castTo(resultGradient, compute));
  KILN_TRY(Value * share, b.op(OpKind::Div, {wide, count}));
  KILN_TRY(Value * tap, b.castTo(share, dtype));
  std::vector<Value *> taps(static_cast<size_t>(kernelH * kernelW), tap);
  KILN_TRY(Value * inputGradient,
           window::scatterWindowTaps(b, axes, taps, geometry, input->type()));
  return std::vector<Value *>{inputGradient};
}

} // namespace kiln::ir
