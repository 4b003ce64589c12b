// The shared builder, image axes and tap scatter of the window gradient rules.
#include "ir/graph/gradients/WindowGradientUtil.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::ir::window {

Expected<Value *> NodeBuilder::op(OpKind kind, std::vector<Value *> operands, AttrMap attrs) {
  return graph_.addNode(kind, std::move(operands), std::move(attrs), location_);
}

Expected<Value *> NodeBuilder::scalar(double value, DType dtype) {
  return constant(dtype, Shape{}, {value});
}

Expected<Value *> NodeBuilder::constant(DType dtype, Shape shape, std::vector<double> values) {
  return op(OpKind::Constant, {},
            {{"dtype", dtype}, {"shape", std::move(shape)}, {"value", std::move(values)}});
}

Expected<Value *> NodeBuilder::reshape(Value *x, Shape shape) {
  if (x->type().shape == shape)
    return x;
  return op(OpKind::Reshape, {x}, {{"shape", std::move(shape)}});
}

Expected<Value *> NodeBuilder::transpose(Value *x, std::vector<int64_t> perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity)
    return x;
  return op(OpKind::Transpose, {x}, {{"perm", std::move(perm)}});
}

Expected<Value *> NodeBuilder::concat(std::vector<Value *> parts, int64_t axis) {
  KILN_CHECK(!parts.empty(), "concat of nothing");
  if (parts.size() == 1)
    return parts[0];
  return op(OpKind::Concat, std::move(parts), {{"axis", axis}});
}

Expected<Value *> NodeBuilder::padOrCrop(Value *x, const std::vector<int64_t> &low,
                                         const std::vector<int64_t> &high) {
  const Shape &shape = x->type().shape;
  KILN_CHECK(low.size() == shape.size() && high.size() == shape.size(),
             "padOrCrop needs one amount per axis");
  std::vector<int64_t> starts, stops, steps, padLow, padHigh;
  bool crops = false, pads = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    starts.push_back(std::max<int64_t>(0, -low[i]));
    stops.push_back(shape[i] - std::max<int64_t>(0, -high[i]));
    steps.push_back(1);
    KILN_CHECK(starts.back() < stops.back() || shape[i] == 0, "padOrCrop crops a whole axis");
    padLow.push_back(std::max<int64_t>(0, low[i]));
    padHigh.push_back(std::max<int64_t>(0, high[i]));
    crops = crops || low[i] < 0 || high[i] < 0;
    pads = pads || low[i] > 0 || high[i] > 0;
  }
  Value *result = x;
  if (crops) {
    KILN_TRY(result,
             op(OpKind::Slice, {result}, {{"starts", starts}, {"stops", stops}, {"steps", steps}}));
  }
  if (pads) {
    KILN_TRY(result, op(OpKind::Pad, {result}, {{"low", padLow}, {"high", padHigh}}));
  }
  return result;
}

Expected<Value *> NodeBuilder::castTo(Value *x, DType dtype) {
  if (x->type().dtype == dtype)
    return x;
  return op(OpKind::Cast, {x}, {{"dtype", dtype}});
}

Expected<Value *> NodeBuilder::zeros(const TensorType &type) {
  KILN_TRY(Value * zero, scalar(0.0, type.dtype));
  return op(OpKind::BroadcastTo, {zero}, {{"shape", type.shape}});
}

ImageAxes ImageAxes::of(const Node &node) {
  if (getString(node.attrs(), "layout") == "nhwc")
    return ImageAxes{true, 3, 1, 2};
  return ImageAxes{false, 1, 2, 3};
}

Shape ImageAxes::withSpatial(Shape shape, int64_t h, int64_t w) const {
  shape[static_cast<size_t>(height)] = h;
  shape[static_cast<size_t>(width)] = w;
  return shape;
}

Expected<void> checkResultGradient(const Node &node, const Value *resultGradient) {
  KILN_CHECK(resultGradient != nullptr, "null result gradient");
  if (!isFloatingPoint(node.type().dtype))
    return makeError(ErrorCode::TypeMismatch,
                     fmt::format("{} has no gradient: its result {} is not floating-point",
                                 node.name(), node.type().str()),
                     node.location());
  if (resultGradient->type() != node.type())
    return makeError(ErrorCode::TypeMismatch,
                     fmt::format("{} gradient: the result gradient is {}, expected the result's "
                                 "type {}",
                                 node.name(), resultGradient->type().str(), node.type().str()),
                     node.location());
  return {};
}

namespace {

/// Interleaves coarse images into one fine image: pixel (oh * sh + rh,
/// ow * sw + rw) of the result is pixel (oh, ow) of rows[rh][rw]; the rows and
/// columns of each stride cell beyond those given are zeros. Every image of
/// `rows` has the same type and every row the same length.
Expected<Value *> interleave(NodeBuilder &b, const ImageAxes &axes,
                             const std::vector<std::vector<Value *>> &rows,
                             std::array<int64_t, 2> stride) {
  Value *first = rows.at(0).at(0);
  if (rows.size() == 1 && rows[0].size() == 1 && stride[0] == 1 && stride[1] == 1)
    return first;
  // In the rank-6 form the cell's row axis follows H and its column axis W:
  // [N, C, OH, sh, OW, sw] or [N, OH, sh, OW, sw, C].
  int64_t cellRow = axes.height + 1, cellColumn = axes.width + 2;
  std::vector<Value *> stackedRows;
  for (const std::vector<Value *> &row : rows) {
    std::vector<Value *> cells;
    for (Value *tap : row) {
      KILN_TRY(Value * cell, b.op(OpKind::Unsqueeze, {tap},
                                  {{"axes", std::vector<int64_t>{cellRow, cellColumn}}}));
      cells.push_back(cell);
    }
    KILN_TRY(Value * joined, b.concat(std::move(cells), cellColumn));
    stackedRows.push_back(joined);
  }
  KILN_TRY(Value * stacked, b.concat(std::move(stackedRows), cellRow));
  std::vector<int64_t> low(6, 0), high(6, 0);
  high[static_cast<size_t>(cellRow)] = stride[0] - static_cast<int64_t>(rows.size());
  high[static_cast<size_t>(cellColumn)] = stride[1] - static_cast<int64_t>(rows[0].size());
  KILN_TRY(Value * cells, b.padOrCrop(stacked, low, high));
  auto [height, width] = axes.spatial(first->type().shape);
  return b.reshape(cells,
                   axes.withSpatial(first->type().shape, height * stride[0], width * stride[1]));
}

} // namespace

Expected<Value *> dilateSpatial(NodeBuilder &b, const ImageAxes &axes, Value *x,
                                std::array<int64_t, 2> stride) {
  return interleave(b, axes, {{x}}, stride);
}

Expected<Value *> scatterWindowTaps(NodeBuilder &b, const ImageAxes &axes,
                                    std::span<Value *const> taps, const WindowGeometry &window,
                                    const TensorType &inputType) {
  auto [kernelH, kernelW] = window.kernel;
  auto [strideH, strideW] = window.stride;
  KILN_CHECK(window.dilation[0] == 1 && window.dilation[1] == 1,
             "scatterWindowTaps needs dilation 1");
  KILN_CHECK(static_cast<int64_t>(taps.size()) == kernelH * kernelW, "one tap per window element");
  auto [height, width] = axes.spatial(inputType.shape);
  auto [outHeight, outWidth] = axes.spatial(taps[0]->type().shape);
  int64_t blocksH = (kernelH + strideH - 1) / strideH;
  int64_t blocksW = (kernelW + strideW - 1) / strideW;
  Value *sum = nullptr;
  for (int64_t blockH = 0; blockH < blocksH; ++blockH) {
    for (int64_t blockW = 0; blockW < blocksW; ++blockW) {
      // The block's fine image starts at input pixel (startH, startW).
      int64_t startH = blockH * strideH - window.padding[0];
      int64_t startW = blockW * strideW - window.padding[2];
      int64_t endH = startH + outHeight * strideH, endW = startW + outWidth * strideW;
      if (startH >= height || endH <= 0 || startW >= width || endW <= 0)
        continue; // every tap of the block lands in the padding
      std::vector<std::vector<Value *>> rows;
      for (int64_t kh = blockH * strideH; kh < std::min(kernelH, (blockH + 1) * strideH); ++kh) {
        std::vector<Value *> row;
        for (int64_t kw = blockW * strideW; kw < std::min(kernelW, (blockW + 1) * strideW); ++kw)
          row.push_back(taps[static_cast<size_t>(kh * kernelW + kw)]);
        rows.push_back(std::move(row));
      }
      KILN_TRY(Value * block, interleave(b, axes, rows, window.stride));
      std::vector<int64_t> low(4, 0), high(4, 0);
      low[static_cast<size_t>(axes.height)] = startH;
      high[static_cast<size_t>(axes.height)] = height - endH;
      low[static_cast<size_t>(axes.width)] = startW;
      high[static_cast<size_t>(axes.width)] = width - endW;
      KILN_TRY(Value * placed, b.padOrCrop(block, low, high));
      if (sum) {
        KILN_TRY(sum, b.op(OpKind::Add, {sum, placed}));
      } else {
        sum = placed;
      }
    }
  }
  if (!sum)
    return b.zeros(inputType);
  KILN_CHECK(sum->type() == inputType, "scattered taps do not have the input's type");
  return sum;
}

} // namespace kiln::ir::window
