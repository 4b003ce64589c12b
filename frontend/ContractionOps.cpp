// The DSL's contraction and window op functions: matmul, conv2d, pooling and
// attention, with the DSL-side defaults (accumulator dtype, "same" padding,
// attention scale) resolved here so the IR stores explicit attributes.
#include "frontend/OpBuilder.h"
#include "frontend/Ops.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace kiln {

using detail::buildOp;
using ir::OpKind;

namespace {

DType defaultAccumulator(DType operand) {
  switch (operand) {
  case DType::F64: return DType::F64;
  case DType::I64: return DType::I64;
  case DType::I32:
  case DType::I8: return DType::I32;
  default: return DType::F32;
  }
}

std::vector<int64_t> toVector(const std::array<int64_t, 2> &pair) { return {pair[0], pair[1]}; }

std::vector<int64_t> toVector(const std::array<int64_t, 4> &quad) {
  return {quad[0], quad[1], quad[2], quad[3]};
}

// Spatial H and W of an image tensor in `layout` (0 where the rank is wrong:
// shape inference then reports the rank with the op's context).
std::array<int64_t, 2> spatialDims(const Tensor &x, Layout layout) {
  if (x.rank() != 4)
    return {0, 0};
  return layout == Layout::NHWC ? std::array<int64_t, 2>{x.dim(1), x.dim(2)}
                                : std::array<int64_t, 2>{x.dim(2), x.dim(3)};
}

std::array<int64_t, 2> filterWindow(const Tensor &filter, Layout layout) {
  if (filter.rank() != 4)
    return {0, 0};
  return layout == Layout::NHWC ? std::array<int64_t, 2>{filter.dim(1), filter.dim(2)}
                                : std::array<int64_t, 2>{filter.dim(2), filter.dim(3)};
}

// PyTorch's ceil_mode output size, as extra padding after the axis: ceil rather than floor
// of (input + padding - kernel) / stride, less the last window when it would start beyond
// the input and its leading padding.
int64_t ceilModeExtraPadding(int64_t input, int64_t kernel, int64_t stride, int64_t before,
                             int64_t after) {
  int64_t span = input + before + after - kernel;
  if (input <= 0 || kernel <= 0 || stride <= 0 || span < 0)
    return 0; // shape inference reports these with the op's context
  int64_t outputs = (span + stride - 1) / stride + 1;
  if ((outputs - 1) * stride >= input + before)
    --outputs;
  return std::max<int64_t>(0, (outputs - 1) * stride + kernel - (input + before + after));
}

Tensor pool(OpKind kind, Tensor x, const Pool2DOptions &options, const std::source_location &loc) {
  std::array<int64_t, 2> stride = options.stride;
  if (stride[0] == 0 && stride[1] == 0)
    stride = options.kernel;
  std::array<int64_t, 2> input = spatialDims(x, options.layout);
  auto pads = options.padding.resolve(input, options.kernel, stride);
  if (!pads)
    return detail::failOn(x, pads.error().code(),
                          fmt::format("{}: {}", ir::opName(kind), pads.error().message()), loc);
  if (options.ceilMode) {
    for (int axis = 0; axis < 2; ++axis) {
      int64_t extra = ceilModeExtraPadding(input[axis], options.kernel[axis], stride[axis],
                                           (*pads)[2 * axis], (*pads)[2 * axis + 1]);
      if (extra > 0 && kind == OpKind::AvgPool2D && options.countIncludePad)
        return detail::failOn(
            x, ErrorCode::Unsupported,
            fmt::format("avg_pool2d: with ceilMode the last window along {} overhangs the "
                        "padding by {}, and with countIncludePad its divisor would count "
                        "padding but not the overhang, which kiln cannot express; set "
                        "countIncludePad = false or pad explicitly",
                        axis == 0 ? "H" : "W", extra),
            loc);
      (*pads)[2 * axis + 1] += extra;
    }
  }
  ir::AttrMap attrs{{"kernel", toVector(options.kernel)},
                    {"stride", toVector(stride)},
                    {"padding", toVector(*pads)},
                    {"layout", std::string(layoutName(options.layout))}};
  if (kind == OpKind::AvgPool2D)
    attrs.emplace("count_include_pad", options.countIncludePad);
  return buildOp(kind, {x}, std::move(attrs), loc);
}

} // namespace

Tensor matmul(Tensor a, Tensor b, MatMulOptions options, std::source_location loc) {
  ir::AttrMap attrs{{"transpose_a", options.transposeA},
                    {"transpose_b", options.transposeB},
                    {"allow_tf32", options.allowTf32},
                    {"accumulate", options.accumulate.value_or(defaultAccumulator(a.dtype()))}};
  return buildOp(OpKind::MatMul, {a, b}, std::move(attrs), loc);
}

Tensor conv2d(Tensor x, Tensor filter, Conv2DOptions options, std::source_location loc) {
  auto pads =
      options.padding.resolve(spatialDims(x, options.layout), filterWindow(filter, options.layout),
                              options.stride, options.dilation);
  if (!pads)
    return detail::failOn(x, pads.error().code(), "conv2d: " + pads.error().message(), loc);
  ir::AttrMap attrs{{"stride", toVector(options.stride)},
                    {"padding", toVector(*pads)},
                    {"dilation", toVector(options.dilation)},
                    {"groups", options.groups},
                    {"layout", std::string(layoutName(options.layout))},
                    {"allow_tf32", options.allowTf32},
                    {"accumulate", options.accumulate.value_or(defaultAccumulator(x.dtype()))}};
  return buildOp(OpKind::Conv2D, {x, filter}, std::move(attrs), loc);
}

Tensor maxPool2d(Tensor x, Pool2DOptions options, std::source_location loc) {
  return pool(OpKind::MaxPool2D, x, options, loc);
}

Tensor avgPool2d(Tensor x, Pool2DOptions options, std::source_location loc) {
  return pool(OpKind::AvgPool2D, x, options, loc);
}

Tensor globalAvgPool(Tensor x, Layout layout, std::source_location loc) {
  return buildOp(OpKind::GlobalAvgPool, {x}, {{"layout", std::string(layoutName(layout))}}, loc);
}

Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, bool causal,
                                 std::optional<double> scale, std::source_location loc) {
  int64_t depth = q.rank() > 0 ? q.dim(-1) : 0;
  double resolved = scale.value_or(depth > 0 ? 1.0 / std::sqrt(static_cast<double>(depth)) : 1.0);
  return buildOp(OpKind::ScaledDotProductAttention, {q, k, v},
                 {{"causal", causal}, {"scale", resolved}}, loc);
}

Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, Tensor mask, bool causal,
                                 std::optional<double> scale, std::source_location loc) {
  int64_t depth = q.rank() > 0 ? q.dim(-1) : 0;
  double resolved = scale.value_or(depth > 0 ? 1.0 / std::sqrt(static_cast<double>(depth)) : 1.0);
  return buildOp(OpKind::ScaledDotProductAttention, {q, k, v, mask},
                 {{"causal", causal}, {"scale", resolved}}, loc);
}

} // namespace kiln
