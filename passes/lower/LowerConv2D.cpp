// conv2d as element functions of the GEMM template (implicit im2col): an element of the
// im2col matrix is one input element at (image, channel, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw),
// read through a predicated load that yields 0 in the padding.
#include "passes/lower/LowerConv2D.h"

#include "ir/kernel/Builder.h"
#include "passes/lower/ContractionKernel.h"
#include "passes/lower/GemmTemplate.h"

#include <fmt/format.h>

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

/// The im2col^T read of nchw Direct: A(b, i, k).
ElementFn nchwDirectWindowElement(const ConvGeometry &g, const BufferPtr &input) {
  return [g, input](std::span<const ExprPtr> idx) {
    auto [n, group, p] = nchwDirectPixel(g, idx[0], idx[1]);
    auto [c, kh, kw] = g.splitReduction(idx[2]);
    ExprPtr channel = add(mul(group, index(g.groupChannels)), c);
    return g.readWindow(input, n, channel, p, kh, kw);
  };
}

/// Filter row o of group (b mod groups), element k: W is [O, I/g, KH, KW], k = (c, kh, kw).
ExprPtr nchwFilterElement(const ConvGeometry &g, const BufferPtr &filter, const ExprPtr &b,
                          const ExprPtr &o, const ExprPtr &k) {
  ExprPtr row = add(mul(mod(b, index(g.groups)), index(g.groupOutChannels)), o);
  return load(filter, add(mul(row, index(g.reduction())), k));
}

/// Direct whenever the output channels of a group fill at least half a vector: reading the
/// input in place beat packing im2col panels on the seed CNN's layers and VGG16's early blocks
/// at batch 1 (Zen 4: 1.1x to 6x), because packing pays an index decomposition per element that
/// the direct micro-kernel hoists out of its k loop. With fewer output channels (depthwise) the
/// vector axis would be mostly padding; im2col puts the pixels there instead (nchw).
/// Three exceptions in nchw, all for images whose output pixels fill the N axis (8 vectors):
/// - a short reduction (under 8 vectors): Direct writes each mr x nr register tile out through
///   a tile buffer, scattered over nr channel planes (runs of mr pixels), a cost that only K
///   multiply-adds per output amortize. At batch 1 (Zen 5, two threads) Im2col ran 1.3x to 1.8x
///   faster on VGG16's conv1_1 (K = 27), 1.4x to 2.1x on ResNet-50's 56x56 1x1 layers of K = 64
///   and 1.2x on the CNN's first layer (K = 9); at K = 128 and 147 Direct was as fast or faster;
/// - a deep reduction (VGG16's 56x56x128, 28x28x256 and 14x14x512 layers): there the direct
///   kernel's A reads stride H*W apart across thousands of k steps and miss the cache, and
///   packed im2col panels ran 1.3x to 2.3x faster (Zen 5, one thread, CPU time, the same sweep
///   of both spaces);
/// - several images, unless the reduction is over 8 times the group's output channels.
///   Direct's in-place reads take a short run of pixels from each of K channel planes per row
///   block, which pays while the input stays in cache (one image, read again run after run);
///   the images of a batch stream from memory, where im2col's packing reads long runs and its
///   write-out is whole vectors along the output's pixels rather than an mr x nr tile scattered
///   over nr channel planes. That write-out is amortized over K multiply-adds, the packing over
///   the O/g output channels sharing each packed element, hence the ratio. At batch 16 (Zen 5,
///   two threads) Im2col ran 1.1x to 2.1x faster on the ResNet-50 and VGG16 layers of over 8
///   vectors of pixels with K <= 8 O (conv1_1 224x224x3->64 2.0x, conv2_1 112x112x64->128 1.9x,
///   the 56x56 1x1 layers 1.1x to 2x, the 14x14 ones 1.6x to 1.9x; the 56x56 1x1 stride-2 one
///   about even), and the CNN's first layer at batch 64 1.3x to 2x; with K = 9 O, Direct was
///   1.25x faster on VGG16's conv1_2 (224x224x64->64) and 1.15x slower on ResNet-50's 56x56 3x3.
Algorithm chooseAlgorithm(const ConvGeometry &g, const codegen::CpuTarget &target) {
  int lanes = accumulateLanes(g.accumulate, target);
  if (2 * g.groupOutChannels < lanes)
    return Algorithm::Im2col;
  if (g.nhwc || g.pixels() < 8 * static_cast<int64_t>(lanes))
    return Algorithm::Direct;
  constexpr int64_t kDeepReduction = 1024;
  bool shortReduction = g.reduction() < 8 * static_cast<int64_t>(lanes);
  bool deep = g.reduction() >= kDeepReduction;
  bool batched = g.images > 1 && g.reduction() <= 8 * g.groupOutChannels;
  return shortReduction || deep || batched ? Algorithm::Im2col : Algorithm::Direct;
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
  if (schedule.algorithm == Algorithm::Direct)
    schedule.gemm.packA = false;
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
      if (direct)
        gemm.packA = false;
      schedule.gemm = gemm;
      schedule.ocBlock = gemm.nr;
      if (schedule != space.front())
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
    problem.aGathered = GatheredOperand{
        input,
        [g](ExprPtr b, ExprPtr i, ExprPtr k) {
          ExprPtr n = div(i, index(g.pixels())), p = mod(i, index(g.pixels()));
          auto [c, kh, kw] = g.splitReduction(k);
          ExprPtr channel = add(mul(b, index(g.groupChannels)), c);
          return g.windowAddress(n, channel, p, kh, kw);
        },
        g.groupChannels};
    problem.a = problem.aGathered->element();
    problem.allowTf32 = g.allowTf32;
    int64_t groupOutForB = g.groupOutChannels, reduction = g.reduction();
    problem.bDense = DenseOperand{
        filter,
        [groupOutForB, reduction](ExprPtr b, ExprPtr k, ExprPtr j) {
          return add(mul(add(mul(b, index(groupOutForB)), j), index(reduction)), k);
        },
        reduction};
    problem.b = problem.bDense->element();
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
    problem.aDense = DenseOperand{
        filter,
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
    problem.a = nchwDirectWindowElement(g, input);
    problem.b = [g, filter](std::span<const ExprPtr> idx) {
      return nchwFilterElement(g, filter, idx[0], idx[2], idx[1]);
    };
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

} // namespace kiln::lower
