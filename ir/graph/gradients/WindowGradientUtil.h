// What the window ops' gradient rules share: a node builder that stamps the
// differentiated node's location on every node it adds, the positions of a
// rank-4 image's axes in either layout, and the data movement that turns
// per-tap tensors back into an input-shaped gradient.
#pragma once

#include "ir/graph/Graph.h"

#include <array>
#include <span>
#include <vector>

namespace kiln::ir::window {

/// Adds nodes at the differentiated node's location, so an error in a
/// gradient still points at the user's line. Data-movement helpers emit no
/// node where nothing would change.
class NodeBuilder {
public:
  NodeBuilder(Graph &graph, const Node &node) : graph_(graph), location_(node.location()) {}

  Expected<Value *> op(OpKind kind, std::vector<Value *> operands, AttrMap attrs = {});
  /// A splat of shape [] that broadcasts.
  Expected<Value *> scalar(double value, DType dtype);
  Expected<Value *> constant(DType dtype, Shape shape, std::vector<double> values);
  Expected<Value *> reshape(Value *x, Shape shape);
  Expected<Value *> transpose(Value *x, std::vector<int64_t> perm);
  /// `parts` joined along `axis`; the one part itself when there is one.
  Expected<Value *> concat(std::vector<Value *> parts, int64_t axis);
  /// `x` with low[i] zeros added before and high[i] after axis i; a negative
  /// amount crops that many elements instead.
  Expected<Value *> padOrCrop(Value *x, const std::vector<int64_t> &low,
                              const std::vector<int64_t> &high);
  /// `x` converted to `dtype`; `x` itself when it already has that dtype.
  Expected<Value *> castTo(Value *x, DType dtype);
  /// Zeros of `type`.
  Expected<Value *> zeros(const TensorType &type);

private:
  Graph &graph_;
  Location location_;
};

/// Where the axes of a rank-4 image lie: [N, C, H, W] or [N, H, W, C].
struct ImageAxes {
  bool nhwc = false;
  int64_t channel = 1, height = 2, width = 3;

  static ImageAxes of(const Node &node);
  /// The image's (H, W).
  std::array<int64_t, 2> spatial(const Shape &shape) const {
    return {shape[static_cast<size_t>(height)], shape[static_cast<size_t>(width)]};
  }
  /// `shape` with H and W replaced.
  Shape withSpatial(Shape shape, int64_t h, int64_t w) const;
};

/// Fails unless `resultGradient` has the node's result type and that type is a
/// floating-point one; the error names the op and the node's location.
Expected<void> checkResultGradient(const Node &node, const Value *resultGradient);

/// `x` with stride-1 zeros after every element along H and W (so H becomes
/// H * strideH, trailing zeros included).
Expected<Value *> dilateSpatial(NodeBuilder &b, const ImageAxes &axes, Value *x,
                                std::array<int64_t, 2> stride);

/// The window geometry of a pool or of a conv's taps.
struct WindowGeometry {
  std::array<int64_t, 2> kernel; ///< taps (KH, KW)
  std::array<int64_t, 2> stride; ///< (sh, sw)
  std::array<int64_t, 2> dilation{1, 1};
  std::array<int64_t, 4> padding; ///< [top, bottom, left, right]
};

/// The inverse of reading a window tap by tap: taps[kh * KW + kw] holds, per
/// output pixel (oh, ow), what flows to input pixel
/// (oh * sh + kh - top, ow * sw + kw - left); the result, of `inputType`, sums
/// every tap's contributions and drops those that land in the padding.
/// Taps kh = q * sh + r with the same q never overlap, so they are interleaved
/// into one tensor by concat and reshape, and only ceil(KH/sh) * ceil(KW/sw)
/// such blocks are shifted and added (one block, no add, when kernel <= stride).
/// Needs dilation 1.
Expected<Value *> scatterWindowTaps(NodeBuilder &b, const ImageAxes &axes,
                                    std::span<Value *const> taps, const WindowGeometry &window,
                                    const TensorType &inputType);

} // namespace kiln::ir::window
