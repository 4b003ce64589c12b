// Reference contractions: matmul with broadcast batch dims and transposes, and
// conv2d (nchw and nhwc, stride, padding, dilation, groups). Float operands
// accumulate in fp64 whatever the `accumulate` attribute says (the oracle is
// the exact-ish result); integer operands accumulate in 64-bit wrapping
// arithmetic. Loops are ordered so the innermost one runs over contiguous
// memory with no index math, which keeps the seed CNN at seconds per batch.
#include "ir/graph/Reference.h"
#include "ir/graph/reference/IndexMath.h"
#include "ir/graph/reference/IntegerArithmetic.h"

#include <algorithm>
#include <type_traits>

namespace kiln::ir {
namespace {

using reference::broadcastStrides;
using reference::StridedWalker;

/// Element type of the accumulation: fp64 for floats, a wrapping 64-bit
/// pattern for integers.
template <typename T> std::vector<T> asAccumulator(const std::vector<double> &data) {
  if constexpr (std::is_same_v<T, double>) {
    return data;
  } else {
    std::vector<T> converted(data.size());
    std::transform(data.begin(), data.end(), converted.begin(), reference::toWrapping);
    return converted;
  }
}

template <typename T> std::vector<double> fromAccumulator(std::vector<T> data, DType dtype) {
  if constexpr (std::is_same_v<T, double>) {
    return data;
  } else {
    std::vector<double> converted(data.size());
    std::transform(data.begin(), data.end(), converted.begin(),
                   [dtype](T bits) { return reference::fromWrapping(bits, dtype); });
    return converted;
  }
}

// ---- matmul --------------------------------------------------------------------------------

struct MatMulDims {
  int64_t m, n, k;
  bool transposeA, transposeB;
};

/// out[m, n] += a[m, k] * b[k, n] for one batch element; `a` and `b` may be
/// stored transposed.
template <typename T> void multiplyMatrix(const T *a, const T *b, T *out, const MatMulDims &dims) {
  // Strides of a(i, k) and b(k, j) in elements.
  int64_t aRow = dims.transposeA ? 1 : dims.k, aCol = dims.transposeA ? dims.m : 1;
  int64_t bRow = dims.transposeB ? 1 : dims.n, bCol = dims.transposeB ? dims.k : 1;
  if (!dims.transposeB) {
    // i-k-j: the inner loop streams a row of b into a row of out.
    for (int64_t i = 0; i < dims.m; ++i) {
      T *outRow = out + i * dims.n;
      for (int64_t kk = 0; kk < dims.k; ++kk) {
        T aik = a[i * aRow + kk * aCol];
        const T *bRowData = b + kk * bRow;
        for (int64_t j = 0; j < dims.n; ++j)
          outRow[j] += aik * bRowData[j];
      }
    }
    return;
  }
  // b is [n, k]: each output is a dot product of a row of a and a row of b.
  for (int64_t i = 0; i < dims.m; ++i) {
    for (int64_t j = 0; j < dims.n; ++j) {
      const T *bColumn = b + j * bCol;
      T sum = 0;
      for (int64_t kk = 0; kk < dims.k; ++kk)
        sum += a[i * aRow + kk * aCol] * bColumn[kk];
      out[i * dims.n + j] += sum;
    }
  }
}

template <typename T>
std::vector<double> matmul(const RefTensor &a, const RefTensor &b, const TensorType &resultType,
                           const MatMulDims &dims) {
  const Shape &result = resultType.shape;
  DType dtype = resultType.dtype;
  Shape batch(result.begin(), result.end() - 2);
  Shape aBatch(a.type.shape.begin(), a.type.shape.end() - 2);
  Shape bBatch(b.type.shape.begin(), b.type.shape.end() - 2);
  std::vector<int64_t> aStrides = broadcastStrides(aBatch, batch);
  std::vector<int64_t> bStrides = broadcastStrides(bBatch, batch);
  // Batch strides count whole matrices; scale them to elements.
  for (int64_t &stride : aStrides)
    stride *= dims.m * dims.k;
  for (int64_t &stride : bStrides)
    stride *= dims.k * dims.n;

  std::vector<T> aData = asAccumulator<T>(a.data), bData = asAccumulator<T>(b.data);
  std::vector<T> out(static_cast<size_t>(resultType.numElements()), T(0));
  int64_t numBatches = TensorType{dtype, batch}.numElements();
  StridedWalker<2> walker(batch, {aStrides, bStrides});
  for (int64_t index = 0; index < numBatches; ++index) {
    multiplyMatrix(aData.data() + walker.offset(0), bData.data() + walker.offset(1),
                   out.data() + index * dims.m * dims.n, dims);
    walker.next();
  }
  return fromAccumulator(std::move(out), dtype);
}

// ---- conv2d --------------------------------------------------------------------------------

struct ConvDims {
  int64_t batch, channels, height, width;   // input
  int64_t outChannels, outHeight, outWidth; // result
  int64_t kernelH, kernelW, groupChannels;  // filter (groupChannels = I / groups)
  int64_t strideH, strideW, dilationH, dilationW;
  int64_t padTop, padLeft;
  int64_t groups;
};

/// The half-open range of output positions whose tap at `tapOffset` (the tap's
/// index times its dilation) reads inside [0, size) of the input.
std::pair<int64_t, int64_t> validOutputRange(int64_t size, int64_t outSize, int64_t stride,
                                             int64_t padBefore, int64_t tapOffset) {
  // in = out * stride - padBefore + tapOffset must satisfy 0 <= in < size.
  int64_t low = padBefore - tapOffset;             // out * stride >= low
  int64_t high = size - 1 + padBefore - tapOffset; // out * stride <= high
  int64_t begin = low <= 0 ? 0 : (low + stride - 1) / stride;
  int64_t end = high < 0 ? 0 : high / stride + 1;
  return {begin, std::clamp<int64_t>(end, begin, std::max(begin, outSize))};
}

template <typename T> void convNchw(const T *input, const T *filter, T *out, const ConvDims &d) {
  int64_t outPerGroup = d.outChannels / d.groups;
  int64_t planeIn = d.height * d.width, planeOut = d.outHeight * d.outWidth;
  for (int64_t n = 0; n < d.batch; ++n) {
    for (int64_t o = 0; o < d.outChannels; ++o) {
      int64_t firstChannel = (o / outPerGroup) * d.groupChannels;
      T *outPlane = out + (n * d.outChannels + o) * planeOut;
      for (int64_t c = 0; c < d.groupChannels; ++c) {
        const T *inPlane = input + (n * d.channels + firstChannel + c) * planeIn;
        const T *taps = filter + (o * d.groupChannels + c) * d.kernelH * d.kernelW;
        for (int64_t kh = 0; kh < d.kernelH; ++kh) {
          auto [ohBegin, ohEnd] =
              validOutputRange(d.height, d.outHeight, d.strideH, d.padTop, kh * d.dilationH);
          for (int64_t kw = 0; kw < d.kernelW; ++kw) {
            T weight = taps[kh * d.kernelW + kw];
            auto [owBegin, owEnd] =
                validOutputRange(d.width, d.outWidth, d.strideW, d.padLeft, kw * d.dilationW);
            for (int64_t oh = ohBegin; oh < ohEnd; ++oh) {
              int64_t ih = oh * d.strideH - d.padTop + kh * d.dilationH;
              const T *inRow = inPlane + ih * d.width - d.padLeft + kw * d.dilationW;
              T *outRow = outPlane + oh * d.outWidth;
              for (int64_t ow = owBegin; ow < owEnd; ++ow)
                outRow[ow] += weight * inRow[ow * d.strideW];
            }
          }
        }
      }
    }
  }
}

template <typename T> void convNhwc(const T *input, const T *filter, T *out, const ConvDims &d) {
  int64_t outPerGroup = d.outChannels / d.groups;
  for (int64_t n = 0; n < d.batch; ++n) {
    for (int64_t oh = 0; oh < d.outHeight; ++oh) {
      for (int64_t ow = 0; ow < d.outWidth; ++ow) {
        T *outPixel = out + ((n * d.outHeight + oh) * d.outWidth + ow) * d.outChannels;
        for (int64_t kh = 0; kh < d.kernelH; ++kh) {
          int64_t ih = oh * d.strideH - d.padTop + kh * d.dilationH;
          if (ih < 0 || ih >= d.height)
            continue;
          for (int64_t kw = 0; kw < d.kernelW; ++kw) {
            int64_t iw = ow * d.strideW - d.padLeft + kw * d.dilationW;
            if (iw < 0 || iw >= d.width)
              continue;
            const T *inPixel = input + ((n * d.height + ih) * d.width + iw) * d.channels;
            for (int64_t o = 0; o < d.outChannels; ++o) {
              const T *inGroup = inPixel + (o / outPerGroup) * d.groupChannels;
              const T *taps = filter + ((o * d.kernelH + kh) * d.kernelW + kw) * d.groupChannels;
              T sum = 0;
              for (int64_t c = 0; c < d.groupChannels; ++c)
                sum += inGroup[c] * taps[c];
              outPixel[o] += sum;
            }
          }
        }
      }
    }
  }
}

template <typename T>
std::vector<double> conv2d(const RefTensor &input, const RefTensor &filter, size_t resultSize,
                           DType dtype, const ConvDims &dims, bool nhwc) {
  std::vector<T> in = asAccumulator<T>(input.data), taps = asAccumulator<T>(filter.data);
  std::vector<T> out(resultSize, T(0));
  if (nhwc)
    convNhwc(in.data(), taps.data(), out.data(), dims);
  else
    convNchw(in.data(), taps.data(), out.data(), dims);
  return fromAccumulator(std::move(out), dtype);
}

} // namespace

Expected<std::vector<double>> referenceMatMul(const ReferenceContext &context) {
  const RefTensor &a = *context.operands[0];
  const RefTensor &b = *context.operands[1];
  const Shape &result = context.resultType.shape;
  MatMulDims dims;
  dims.transposeA = getBool(context.attrs, "transpose_a");
  dims.transposeB = getBool(context.attrs, "transpose_b");
  dims.m = result[result.size() - 2];
  dims.n = result.back();
  dims.k = a.type.shape[a.type.shape.size() - (dims.transposeA ? 2 : 1)];
  if (isInteger(context.resultType.dtype))
    return matmul<uint64_t>(a, b, context.resultType, dims);
  return matmul<double>(a, b, context.resultType, dims);
}

Expected<std::vector<double>> referenceConv2D(const ReferenceContext &context) {
  const RefTensor &input = *context.operands[0];
  const RefTensor &filter = *context.operands[1];
  bool nhwc = getString(context.attrs, "layout") == "nhwc";
  const Shape &in = input.type.shape, &taps = filter.type.shape, &out = context.resultType.shape;
  const auto &stride = getInts(context.attrs, "stride");
  const auto &dilation = getInts(context.attrs, "dilation");
  const auto &padding = getInts(context.attrs, "padding");
  ConvDims dims;
  dims.batch = in[0];
  dims.channels = in[nhwc ? 3 : 1];
  dims.height = in[nhwc ? 1 : 2];
  dims.width = in[nhwc ? 2 : 3];
  dims.outChannels = taps[0];
  dims.outHeight = out[nhwc ? 1 : 2];
  dims.outWidth = out[nhwc ? 2 : 3];
  dims.kernelH = taps[nhwc ? 1 : 2];
  dims.kernelW = taps[nhwc ? 2 : 3];
  dims.groupChannels = taps[nhwc ? 3 : 1];
  dims.strideH = stride[0];
  dims.strideW = stride[1];
  dims.dilationH = dilation[0];
  dims.dilationW = dilation[1];
  dims.padTop = padding[0];
  dims.padLeft = padding[2];
  dims.groups = getInt(context.attrs, "groups");
  size_t resultSize = static_cast<size_t>(context.resultType.numElements());
  if (isInteger(context.resultType.dtype))
    return conv2d<uint64_t>(input, filter, resultSize, context.resultType.dtype, dims, nhwc);
  return conv2d<double>(input, filter, resultSize, context.resultType.dtype, dims, nhwc);
}

} // namespace kiln::ir
