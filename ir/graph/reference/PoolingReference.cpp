// Reference pooling: max_pool2d and avg_pool2d over windows in nchw or nhwc
// (padding never wins a max; avg divides by the valid count unless
// count_include_pad), and global_avg_pool over H and W.
#include "ir/graph/Reference.h"
#include "ir/graph/reference/IndexMath.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::ir {
namespace {

/// Element strides of the four logical axes (n, c, h, w) of a rank-4 tensor
/// in either layout, so one loop nest serves both.
struct ImageStrides {
  int64_t n, c, h, w;
};

ImageStrides imageStrides(const Shape &shape, bool nhwc) {
  std::vector<int64_t> strides = rowMajorStrides(shape);
  if (nhwc)
    return {strides[0], strides[3], strides[1], strides[2]};
  return {strides[0], strides[1], strides[2], strides[3]};
}

struct ImageDims {
  int64_t n, c, h, w;
};

ImageDims imageDims(const Shape &shape, bool nhwc) {
  if (nhwc)
    return {shape[0], shape[3], shape[1], shape[2]};
  return {shape[0], shape[1], shape[2], shape[3]};
}

} // namespace

Expected<std::vector<double>> referencePool2D(const ReferenceContext &context) {
  const RefTensor &x = *context.operands[0];
  bool nhwc = getString(context.attrs, "layout") == "nhwc";
  bool isMax = context.kind == OpKind::MaxPool2D;
  bool countPadding = !isMax && getBool(context.attrs, "count_include_pad");
  const auto &kernel = getInts(context.attrs, "kernel");
  const auto &stride = getInts(context.attrs, "stride");
  const auto &padding = getInts(context.attrs, "padding");

  ImageDims in = imageDims(x.type.shape, nhwc), out = imageDims(context.resultType.shape, nhwc);
  ImageStrides inStride = imageStrides(x.type.shape, nhwc);
  ImageStrides outStride = imageStrides(context.resultType.shape, nhwc);
  std::vector<double> result(static_cast<size_t>(context.resultType.numElements()));
  for (int64_t n = 0; n < out.n; ++n) {
    for (int64_t c = 0; c < out.c; ++c) {
      const double *plane = x.data.data() + n * inStride.n + c * inStride.c;
      for (int64_t oh = 0; oh < out.h; ++oh) {
        int64_t hBegin = oh * stride[0] - padding[0];
        int64_t hLow = std::max<int64_t>(hBegin, 0);
        int64_t hHigh = std::min<int64_t>(hBegin + kernel[0], in.h);
        for (int64_t ow = 0; ow < out.w; ++ow) {
          int64_t wBegin = ow * stride[1] - padding[2];
          int64_t wLow = std::max<int64_t>(wBegin, 0);
          int64_t wHigh = std::min<int64_t>(wBegin + kernel[1], in.w);
          double accumulator = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int64_t ih = hLow; ih < hHigh; ++ih) {
            for (int64_t iw = wLow; iw < wHigh; ++iw) {
              double value = plane[ih * inStride.h + iw * inStride.w];
              if (!isMax)
                accumulator += value;
              else if (std::isnan(value) || value > accumulator)
                accumulator = std::isnan(accumulator) ? accumulator : value;
            }
          }
          if (!isMax) {
            // Shape inference bounds the window's area by 2^53.
            int64_t count = countPadding ? kernel[0] * kernel[1] : (hHigh - hLow) * (wHigh - wLow);
            accumulator /= static_cast<double>(count);
          }
          result[static_cast<size_t>(n * outStride.n + c * outStride.c + oh * outStride.h +
                                     ow * outStride.w)] = accumulator;
        }
      }
    }
  }
  return result;
}

Expected<std::vector<double>> referenceGlobalAvgPool(const ReferenceContext &context) {
  const RefTensor &x = *context.operands[0];
  bool nhwc = getString(context.attrs, "layout") == "nhwc";
  ImageDims in = imageDims(x.type.shape, nhwc);
  ImageStrides inStride = imageStrides(x.type.shape, nhwc);
  // The result [N, C, 1, 1] or [N, 1, 1, C] is row-major (n, c) either way.
  std::vector<double> result(static_cast<size_t>(in.n * in.c));
  for (int64_t n = 0; n < in.n; ++n) {
    for (int64_t c = 0; c < in.c; ++c) {
      const double *plane = x.data.data() + n * inStride.n + c * inStride.c;
      double sum = 0.0;
      for (int64_t h = 0; h < in.h; ++h)
        for (int64_t w = 0; w < in.w; ++w)
          sum += plane[h * inStride.h + w * inStride.w];
      result[static_cast<size_t>(n * in.c + c)] = sum / static_cast<double>(in.h * in.w);
    }
  }
  return result;
}

} // namespace kiln::ir
