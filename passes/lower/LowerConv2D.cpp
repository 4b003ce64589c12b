// conv2d as element functions of the GEMM template (implicit im2col): an element of the
// im2col matrix is one input element at (image, channel, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw),
// read through a predicated load that yields 0 in the padding.
#include "passes/lower/LowerConv2D.h"

#include "ir/kernel/Builder.h"
#include "passes/lower/ContractionKernel.h"
#include "passes/lower/GemmTemplate.h"
#include "passes/lower/RuntimeSizes.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <tuple>

namespace kiln::lower {
namespace {

using namespace kir;
using Algorithm = Conv2DSchedule::Algorithm;

/// Direct nchw folds the images into M when an image has at most this many output pixels:
/// tiny per-image GEMMs would each pack the filter again, while folding costs a division per
/// output element in the write-out (the channel planes of each image are separate).
constexpr int64_t kFoldMaxPixels = 256;

/// The sizes and attributes of one conv2d node.
struct ConvGeometry {
  bool nhwc = false;
  int64_t images, channels, height, width;
  int64_t outChannels, outHeight, outWidth;
  int64_t kernelH, kernelW, groupChannels, groupOutChannels, groups;
  int64_t strideH, strideW, dilationH, dilationW, padTop, padLeft;
  DType accumulate;
  DType operandDtype;
  bool allowTf32;
  /// Static facts that drop bounds checks: which sides of the window can leave the input.
  bool checkTop, checkBottom, checkLeft, checkRight;

  explicit ConvGeometry(const ir::Node &node) {
    const ir::Shape &in = node.operand(0)->type().shape, &taps = node.operand(1)->type().shape;
    const ir::Shape &out = node.type().shape;
    const auto &attrs = node.attrs();
    nhwc = ir::getString(attrs, "layout") == "nhwc";
    images = in[0];
    channels = in[nhwc ? 3 : 1];
    height = in[nhwc ? 1 : 2];
    width = in[nhwc ? 2 : 3];
    outChannels = taps[0];
    kernelH = taps[nhwc ? 1 : 2];
    kernelW = taps[nhwc ? 2 : 3];
    groupChannels = taps[nhwc ? 3 : 1];
    outHeight = out[nhwc ? 1 : 2];
    outWidth = out[nhwc ? 2 : 3];
    groups = ir::getInt(attrs, "groups");
    groupOutChannels = outChannels / groups;
    const auto &stride = ir::getInts(attrs, "stride");
    const auto &dilation = ir::getInts(attrs, "dilation");
    const auto &padding = ir::getInts(attrs, "padding");
    strideH = stride[0];
    strideW = stride[1];
    dilationH = dilation[0];
    dilationW = dilation[1];
    padTop = padding[0];
    padLeft = padding[2];
    accumulate = ir::getType(attrs, "accumulate");
    operandDtype = node.operand(0)->type().dtype;
    allowTf32 = ir::getBool(attrs, "allow_tf32");
    checkTop = padTop > 0;
    checkLeft = padLeft > 0;
    checkBottom = (outHeight - 1) * strideH - padTop + (kernelH - 1) * dilationH >= height;
    checkRight = (outWidth - 1) * strideW - padLeft + (kernelW - 1) * dilationW >= width;
  }

  int64_t pixels() const { return outHeight * outWidth; }
  /// Whether a window's row and column, their corners and taps fit in 32 bits with room to
  /// spare: |corner| <= out * stride + pad, |tap| <= kernel * dilation.
  bool narrowBounds() const {
    constexpr int64_t kLimit = int64_t(1) << 30;
    return outHeight * strideH + padTop + kernelH * dilationH + height < kLimit &&
           outWidth * strideW + padLeft + kernelW * dilationW + width < kLimit;
  }
  /// Direct nchw runs one GEMM per group over every image's pixels (else one per image).
  bool foldImages() const { return !nhwc && pixels() <= kFoldMaxPixels; }
  int64_t window() const { return kernelH * kernelW; }
  /// The reduction length of one output element.
  int64_t reduction() const { return groupChannels * window(); }
  /// A 1x1, stride-1, unpadded convolution reads pixel p of the output at pixel p of the input.
  bool isPointwise() const {
    return window() == 1 && strideH == 1 && strideW == 1 && !checkTop && !checkLeft &&
           !checkBottom && !checkRight && outHeight == height && outWidth == width;
  }

  ExprPtr inputOffset(const ExprPtr &n, const ExprPtr &channel, const ExprPtr &ih,
                      const ExprPtr &iw) const {
    if (nhwc)
      return add(mul(add(mul(add(mul(n, index(height)), ih), index(width)), iw), index(channels)),
                 channel);
    return add(
        mul(add(mul(add(mul(n, index(channels)), channel), index(height)), ih), index(width)), iw);
  }

  /// Input element under tap (kh, kw) of output pixel p (within the image), 0 in the padding.
  ExprPtr readWindow(const BufferPtr &input, const ExprPtr &n, const ExprPtr &channel,
                     const ExprPtr &p, const ExprPtr &kh, const ExprPtr &kw) const {
    auto [offset, inside] = windowAddress(n, channel, p, kh, kw);
    if (!inside)
      return load(input, offset);
    return load(input, offset, 1, inside);
  }

  /// The offset of that element and whether it lies in the input (nullptr: always).
  std::pair<ExprPtr, ExprPtr> windowAddress(const ExprPtr &n, const ExprPtr &channel,
                                            const ExprPtr &p, const ExprPtr &kh,
                                            const ExprPtr &kw) const {
    if (isPointwise()) {
      if (nhwc)
        return {add(mul(add(mul(n, index(pixels())), p), index(channels)), channel), nullptr};
      return {add(mul(add(mul(n, index(channels)), channel), index(pixels())), p), nullptr};
    }
    ExprPtr oh = div(p, index(outWidth)), ow = mod(p, index(outWidth));
    // The window's corner (depends on the output pixel only) and the tap's step from it
    // (on the reduction index only), kept apart so that a GEMM's copy loop computes the
    // first once per row and the second once per K tile.
    ExprPtr cornerH = sub(mul(oh, index(strideH)), index(padTop));
    ExprPtr cornerW = sub(mul(ow, index(strideW)), index(padLeft));
    ExprPtr tapH = mul(kh, index(dilationH)), tapW = mul(kw, index(dilationW));
    ExprPtr ih = add(cornerH, tapH), iw = add(cornerW, tapW);
    // The bounds in 32 bits where every corner and tap fits (on a GPU a 64-bit add, compare
    // or max costs two instructions or more), else in 64.
    const Type boundType = Type::scalar(narrowBounds() ? DType::I32 : DType::I64);
    auto bound = [&](const ExprPtr &corner, const ExprPtr &tap) {
      return add(cast(corner, boundType), cast(tap, boundType));
    };
    ExprPtr ihBound = bound(cornerH, tapH), iwBound = bound(cornerW, tapW);
    auto constant = [&](int64_t v) { return intImm(v, boundType); };
    ExprPtr inside = boolImm(true);
    if (checkTop)
      inside = logicalAnd(inside, ge(ihBound, constant(0)));
    if (checkBottom)
      inside = logicalAnd(inside, lt(ihBound, constant(height)));
    if (checkLeft)
      inside = logicalAnd(inside, ge(iwBound, constant(0)));
    if (checkRight)
      inside = logicalAnd(inside, lt(iwBound, constant(width)));
    // nhwc: the corner's offset plus the tap's, ((n H + ih) W + iw) C + channel reassociated.
    ExprPtr offset =
        nhwc ? add(inputOffset(n, index(0), cornerH, cornerW),
                   add(mul(add(mul(tapH, index(width)), tapW), index(channels)), channel))
             : inputOffset(n, channel, ih, iw);
    if (constIntValue(inside))
      return {offset, nullptr};
    return {offset, inside};
  }

  /// Splits a reduction index into (channel within the group, kh, kw) in the filter's order:
  /// (c, kh, kw) for nchw, (kh, kw, c) for nhwc.
  std::array<ExprPtr, 3> splitReduction(const ExprPtr &k) const {
    if (nhwc) {
      ExprPtr c = mod(k, index(groupChannels));
      ExprPtr tap = div(k, index(groupChannels));
      return {c, div(tap, index(kernelW)), mod(tap, index(kernelW))};
    }
    ExprPtr tap = mod(k, index(window()));
    return {div(k, index(window())), div(tap, index(kernelW)), mod(tap, index(kernelW))};
  }

  GemmShape gemmShape(Algorithm algorithm) const {
    GemmShape shape = layoutGemmShape(algorithm);
    shape.aInPlace = algorithm == Algorithm::Direct;
    return shape;
  }

  GemmShape layoutGemmShape(Algorithm algorithm) const {
    if (nhwc) {
      GemmShape shape{groups, images * pixels(), groupOutChannels, reduction(), accumulate};
      shape.operandDtype = operandDtype;
      shape.allowTf32 = allowTf32;
      shape.denseOperands = true; // im2col rows in runs of a tap's channels, filter rows dense
      shape.aContiguousInK = shape.bContiguousInK = true;
      shape.aRun = groupChannels;
      shape.bRun = reduction();
      return shape;
    }
    if (algorithm == Algorithm::Direct && foldImages())
      return {groups, images * pixels(), groupOutChannels, reduction(), accumulate};
    if (algorithm == Algorithm::Direct)
      return {images * groups, pixels(), groupOutChannels, reduction(), accumulate};
    return {images * groups, groupOutChannels, pixels(), reduction(), accumulate};
  }
};

/// The im2col read of nchw Im2col: B(b = image*groups + group, k, p).
ElementFn nchwWindowElement(const ConvGeometry &g, const BufferPtr &input) {
  return [g, input](std::span<const ExprPtr> idx) {
    ExprPtr n = div(idx[0], index(g.groups)), group = mod(idx[0], index(g.groups));
    auto [c, kh, kw] = g.splitReduction(idx[1]);
    ExprPtr channel = add(mul(group, index(g.groupChannels)), c);
    return g.readWindow(input, n, channel, idx[2], kh, kw);
  };
}

/// The (image, group) and pixel of nchw Direct's GEMM index (b, i).
std::array<ExprPtr, 3> nchwDirectPixel(const ConvGeometry &g, const ExprPtr &b, const ExprPtr &i) {
  if (g.foldImages()) // b = group, i = image*pixels + p
    return {div(i, index(g.pixels())), b, mod(i, index(g.pixels()))};
  return {div(b, index(g.groups)), mod(b, index(g.groups)), i}; // b = image*groups + group
}

/// The im2col^T read of nchw Direct, A(b, i, k), with K in tap-major order, k = (kh, kw, c):
/// for one tap the group's channels are a run of planes H*W apart, equally inside or outside
/// the input, so the micro-kernel reads them with one address and padding test per tap
/// (GatheredOperand::stride). The filter is read in the same order (nchwDirectFilterElement).
GatheredOperand nchwDirectWindow(const ConvGeometry &g, const BufferPtr &input) {
  auto address = [g](ExprPtr b, ExprPtr i, ExprPtr k) {
    auto [n, group, p] = nchwDirectPixel(g, b, i);
    ExprPtr c = mod(k, index(g.groupChannels)), tap = div(k, index(g.groupChannels));
    ExprPtr channel = add(mul(group, index(g.groupChannels)), c);
    return g.windowAddress(n, channel, p, div(tap, index(g.kernelW)), mod(tap, index(g.kernelW)));
  };
  GatheredOperand window{input, address, g.groupChannels};
  window.stride = g.height * g.width;
  return window;
}

/// Filter row o of group (b mod groups) at nchw Direct's k = (kh, kw, c): W is [O, I/g, KH, KW].
ExprPtr nchwDirectFilterElement(const ConvGeometry &g, const BufferPtr &filter, const ExprPtr &b,
                                const ExprPtr &o, const ExprPtr &k) {
  ExprPtr row = add(mul(mod(b, index(g.groups)), index(g.groupOutChannels)), o);
  ExprPtr c = mod(k, index(g.groupChannels)), tap = div(k, index(g.groupChannels));
  return load(filter, add(mul(row, index(g.reduction())), add(mul(c, index(g.window())), tap)));
}

/// Direct whenever the output channels of a group fill at least half a vector: its micro-kernel
/// reads the input in place, one address and padding test per pixel and filter tap, then a run
/// of the tap's channels (GemmTemplate's segmented micro-kernel), where Im2col pays an index
/// decomposition per element to pack panels. With fewer output channels (depthwise) the vector
/// axis would be mostly padding; im2col puts the pixels there instead (nchw).
/// One exception in nchw, for images whose output pixels fill the N axis (8 vectors): a short
/// reduction (at most 8 vectors), where Direct's write-out of each mr x nr register tile,
/// scattered over nr channel planes, is amortized over too few multiply-adds. Measured with
/// bench/cpu_bench.cpp (Zen 5, two threads, kiln against oneDNN in one run): ResNet-50's 56x56
/// and 28x28 1x1 layers of K = 64 and 128 ran 1.3x to 1.9x faster as Im2col at batch 1 and 16,
/// and at K = 256 and above Direct was as fast or up to 2x faster on every ResNet-50 and
/// VGG16 layer (VGG16's conv2_2 at batch 1 23.2 -> 12.3 ms, conv2_1 at batch 16 163 -> 81 ms,
/// ResNet-50's 28x28 3x3 stride-2 1.45 -> 0.80 ms).
Algorithm chooseAlgorithm(const ConvGeometry &g, const codegen::CpuTarget &target) {
  int lanes = accumulateLanes(g.accumulate, target);
  if (2 * g.groupOutChannels < lanes)
    return Algorithm::Im2col;
  if (g.nhwc || g.pixels() < 8 * static_cast<int64_t>(lanes))
    return Algorithm::Direct;
  bool shortReduction = g.reduction() <= 8 * static_cast<int64_t>(lanes);
  return shortReduction ? Algorithm::Im2col : Algorithm::Direct;
}

/// A kc block that Direct's micro-kernel reads in whole channel runs (one per tap) of a
/// reduction of `k`: when kc holds a run, as many blocks as kc asks for, each of whole runs and
/// as even as the runs allow; else the largest divisor of the run not above kc (GemmTemplate's
/// gatheredSegment). Rounding kc down to runs instead left slivers: ResNet-50's 28x28 3x3
/// layer (K = 1152, 9 runs of 128) took 512 + 512 + 128, a third block whose partial sums make
/// one more pass over the output, and ran 1.21x faster as 640 + 512 (AVX2 Zen 3, two threads,
/// candidates timed in turn in one process).
int64_t alignToRuns(int64_t kc, int64_t run, int64_t k) {
  if (run <= 1)
    return kc;
  if (kc >= run) {
    int64_t blocks = ceilDiv(k, kc);
    return ceilDiv(ceilDiv(k, run), blocks) * run;
  }
  for (int64_t pieces = ceilDiv(run, kc);; ++pieces)
    if (run % pieces == 0)
      return run / pieces;
}

} // namespace

GemmShape conv2DGemmShape(const ir::Node &conv, Algorithm algorithm) {
  return ConvGeometry(conv).gemmShape(algorithm);
}

Conv2DSchedule defaultConv2DSchedule(const ir::Node &conv, const codegen::CpuTarget &target) {
  ConvGeometry g(conv);
  Conv2DSchedule schedule;
  schedule.algorithm = chooseAlgorithm(g, target);
  schedule.gemm = defaultGemmSchedule(g.gemmShape(schedule.algorithm), target);
  if (schedule.algorithm == Algorithm::Direct) {
    schedule.gemm.packA = false;
    schedule.gemm.kc = alignToRuns(schedule.gemm.kc, g.groupChannels, g.reduction());
  }
  schedule.ocBlock = schedule.gemm.nr;
  return schedule;
}

std::vector<Conv2DSchedule> conv2DScheduleSpace(const ir::Node &conv,
                                                const codegen::CpuTarget &target) {
  ConvGeometry g(conv);
  std::vector<Conv2DSchedule> space{defaultConv2DSchedule(conv, target)};
  for (Algorithm algorithm : {Algorithm::Im2col, Algorithm::Direct}) {
    bool direct = algorithm == Algorithm::Direct;
    for (MatMulSchedule gemm : gemmScheduleSpace(g.gemmShape(algorithm), target, false)) {
      Conv2DSchedule schedule;
      schedule.algorithm = algorithm;
      if (direct) {
        gemm.packA = false;
        gemm.kc = alignToRuns(gemm.kc, g.groupChannels, g.reduction());
      }
      schedule.gemm = gemm;
      schedule.ocBlock = gemm.nr;
      if (std::find(space.begin(), space.end(), schedule) == space.end())
        space.push_back(schedule);
    }
  }
  return space;
}

GemmProblem conv2DGemmProblem(const ir::Node &conv, Algorithm algorithm,
                              ContractionKernel &kernel) {
  ConvGeometry g(conv);
  BufferPtr input = kernel.operandBuffer(0), filter = kernel.operandBuffer(1);
  bool direct = algorithm == Algorithm::Direct;
  GemmShape shape = g.gemmShape(algorithm);

  GemmProblem problem;
  GemmOffsetFn outputOffset;
  RootIndexFn rootIndex;
  int64_t pixels = g.pixels(), outWidth = g.outWidth, outChannels = g.outChannels;
  int64_t groupOut = g.groupOutChannels, groups = g.groups;
  if (g.nhwc) {
    // C[p][o] (Im2col and Direct alike): output [N, OH, OW, O] is p-major with o contiguous.
    // The window's channels and a filter row [KH, KW, I/g] are contiguous along K; the
    // channels of one tap are adjacent, so k runs of groupChannels are contiguous.
    problem.aContiguousInK = problem.bContiguousInK = true;
    problem.aGathered = GatheredOperand{input,
                                        [g](ExprPtr b, ExprPtr i, ExprPtr k) {
                                          ExprPtr n = div(i, index(g.pixels())),
                                                  p = mod(i, index(g.pixels()));
                                          auto [c, kh, kw] = g.splitReduction(k);
                                          ExprPtr channel = add(mul(b, index(g.groupChannels)), c);
                                          return g.windowAddress(n, channel, p, kh, kw);
                                        },
                                        g.groupChannels};
    // With one group and unit dilation a row of taps is contiguous: tap kw + 1's channels
    // follow tap kw's.
    if (g.groups == 1 && g.dilationW == 1 && g.kernelW > 1)
      problem.aGathered->windowRow = g.kernelW * g.groupChannels;
    problem.a = problem.aGathered->element();
    problem.allowTf32 = g.allowTf32;
    int64_t groupOutForB = g.groupOutChannels, reduction = g.reduction();
    problem.bDense =
        DenseOperand{filter,
                     [groupOutForB, reduction](ExprPtr b, ExprPtr k, ExprPtr j) {
                       return add(mul(add(mul(b, index(groupOutForB)), j), index(reduction)), k);
                     },
                     reduction};
    problem.b = problem.bDense->element();
    // One filter matrix per group, and the batch runs over the groups.
    problem.bWeight = WeightOperand{shape.batch, [](ExprPtr b) { return b; },
                                    [](ExprPtr matrix) { return matrix; }};
    outputOffset = [outChannels, groupOut](ExprPtr b, ExprPtr i, ExprPtr j) {
      return add(add(mul(i, index(outChannels)), mul(b, index(groupOut))), j);
    };
    rootIndex = [pixels, outWidth, groupOut](std::span<const ExprPtr> bij) {
      ExprPtr p = mod(bij[1], index(pixels));
      return std::vector<ExprPtr>{div(bij[1], index(pixels)), div(p, index(outWidth)),
                                  mod(p, index(outWidth)),
                                  add(mul(bij[0], index(groupOut)), bij[2])};
    };
  } else if (!direct) {
    // Per (image, group): C[o][p] = W[o][k] X[k][p]; output plane (b*Og + o) is contiguous in p.
    problem.aContiguousInK = true;
    problem.bContiguousInK = false;
    problem.b = nchwWindowElement(g, input);
    int64_t groupsForA = g.groups, groupOutForA = g.groupOutChannels, reduction = g.reduction();
    problem.aDense =
        DenseOperand{filter,
                     [groupsForA, groupOutForA, reduction](ExprPtr b, ExprPtr o, ExprPtr k) {
                       ExprPtr row = add(mul(mod(b, index(groupsForA)), index(groupOutForA)), o);
                       return add(mul(row, index(reduction)), k);
                     },
                     reduction};
    problem.a = problem.aDense->element();
    outputOffset = [pixels, groupOut](ExprPtr b, ExprPtr i, ExprPtr j) {
      return add(mul(add(mul(b, index(groupOut)), i), index(pixels)), j);
    };
    rootIndex = [groups, groupOut, outWidth](std::span<const ExprPtr> bij) {
      return std::vector<ExprPtr>{div(bij[0], index(groups)),
                                  add(mul(mod(bij[0], index(groups)), index(groupOut)), bij[1]),
                                  div(bij[2], index(outWidth)), mod(bij[2], index(outWidth))};
    };
  } else {
    // Direct nchw: C[p][o] per (image, group), or per group over the pixels of every image;
    // the output's channel planes are strided by OH*OW, so the write-out runs along p.
    problem.aContiguousInK = false;
    problem.bContiguousInK = true;
    problem.aGathered = nchwDirectWindow(g, input);
    problem.a = problem.aGathered->element();
    problem.b = [g, filter](std::span<const ExprPtr> idx) {
      return nchwDirectFilterElement(g, filter, idx[0], idx[2], idx[1]);
    };
    // One filter matrix per group: b is a group, or an image's group (b mod groups).
    int64_t groupCount = g.groups;
    problem.bWeight = WeightOperand{
        groupCount,
        [groupCount](ExprPtr b) { return groupCount == 1 ? index(0) : mod(b, index(groupCount)); },
        [](ExprPtr matrix) { return matrix; }};
    problem.outputContiguousInI = true;
    outputOffset = [g, pixels, groupOut, outChannels](ExprPtr b, ExprPtr i, ExprPtr j) {
      auto [n, group, p] = nchwDirectPixel(g, b, i);
      ExprPtr channel = add(mul(group, index(groupOut)), j);
      return add(mul(add(mul(n, index(outChannels)), channel), index(pixels)), p);
    };
    rootIndex = [g, groupOut, outWidth](std::span<const ExprPtr> bij) {
      auto [n, group, p] = nchwDirectPixel(g, bij[0], bij[1]);
      return std::vector<ExprPtr>{n, add(mul(group, index(groupOut)), bij[2]),
                                  div(p, index(outWidth)), mod(p, index(outWidth))};
    };
  }
  problem.name = "conv";
  std::tie(problem.batch, problem.m, problem.n, problem.k, problem.accumulate) =
      std::tuple(shape.batch, shape.m, shape.n, shape.k, shape.accumulate);
  problem.storeResult = kernel.storeResult(rootIndex, outputOffset);
  if (kernel.plainResult(g.accumulate) && !problem.outputContiguousInI) {
    problem.plainOutput = kernel.output();
    problem.plainOffset = outputOffset;
  }
  return problem;
}

void setConv2DRuntimeImages(const ir::Node &conv, Algorithm algorithm, RuntimeSizes &sizes,
                            GemmProblem &problem) {
  ConvGeometry g(conv);
  ExprPtr images = sizes.dim(conv.operand(0), 0);
  if (g.nhwc || (algorithm == Algorithm::Direct && g.foldImages()))
    problem.runtimeM = mul(images, index(g.pixels()));
  else
    problem.runtimeBatch = mul(images, index(g.groups));
}

} // namespace kiln::lower
