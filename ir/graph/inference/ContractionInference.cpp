// Shape inference for contractions (matmul, conv2d, attention) and windowed
// reductions (pooling).
#include "ir/graph/inference/InferenceUtil.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace kiln::ir {

using namespace inference;

namespace {

// Accumulators: floats accumulate in f32 or f64 (f64 operands need f64),
// integers in i32 or i64.
Expected<void> checkAccumulate(const InferContext &context, DType operandType) {
  DType accumulate = getType(context.attrs, "accumulate");
  bool ok = isFloatingPoint(operandType)
                ? (accumulate == DType::F64 ||
                   (accumulate == DType::F32 && operandType != DType::F64))
                : (isInteger(operandType) &&
                   (accumulate == DType::I64 ||
                    (accumulate == DType::I32 && operandType != DType::I64)));
  if (!ok)
    return fail(context, ErrorCode::TypeMismatch,
                "accumulate = {} cannot hold products of {} operands (use {})",
                dtypeName(accumulate), dtypeName(operandType),
                isFloatingPoint(operandType) ? (operandType == DType::F64 ? "f64" : "f32 or f64")
                                             : (operandType == DType::I64 ? "i64" : "i32 or i64"));
  if (getBool(context.attrs, "allow_tf32") && operandType != DType::F32)
    return fail(context, ErrorCode::TypeMismatch, "allow_tf32 applies to f32 operands, got {}",
                dtypeName(operandType));
  return {};
}

// Float contractions round the accumulator back to the operand dtype; integer
// ones return the accumulator (i8 x i8 -> i32 is the point of int8 inference).
DType contractionResultType(const InferContext &context, DType operandType) {
  return isInteger(operandType) ? getType(context.attrs, "accumulate") : operandType;
}

// Broadcasts the batch dims (all but the last two) of the operands; the error
// names every operand in full, not a partially broadcast shape.
Expected<std::vector<SizeExpr>> broadcastBatch(const InferContext &context,
                                               std::vector<std::string_view> names) {
  std::vector<SizeExpr> shape;
  for (size_t index = 0; index < names.size(); ++index) {
    std::vector<SizeExpr> batch = operand(context, index).sizes();
    batch.resize(batch.size() - 2);
    auto next = broadcastSizes(shape, batch);
    if (!next) {
      std::string operands;
      for (size_t i = 0; i < names.size(); ++i)
        operands += fmt::format("{}{} {}", i == 0 ? "" : i + 1 == names.size() ? " and " : ", ",
                                names[i], operand(context, i).str());
      return fail(context, ErrorCode::ShapeMismatch, "batch dims of {} do not broadcast",
                  operands);
    }
    shape = *next;
  }
  return shape;
}

// One spatial axis of a window op: (input + pads - span) / stride + 1, where
// span = (kernel - 1) * dilation + 1. The window must fit for every value of
// the input's symbols, so the fit is checked at the input's least value.
Expected<SizeExpr> windowOutputSize(const InferContext &context, const SizeExpr &input,
                                    int64_t kernel, int64_t stride, int64_t padBefore,
                                    int64_t padAfter, int64_t dilation, std::string_view fits) {
  // Attributes are <= 2^53 (requireInts), so the 128-bit span and padding fit.
  __int128 span = static_cast<__int128>(kernel - 1) * dilation + 1;
  __int128 pads = static_cast<__int128>(padBefore) + padAfter;
  if (span > kMaxElements * 4 || pads - span < -kMaxElements * 4)
    return fail(context, ErrorCode::ShapeMismatch, "{}", fits);
  auto overflow = [&]() {
    return fail(context, ErrorCode::ShapeMismatch, "the output size overflows (padding {})",
                shapeStr(getInts(context.attrs, "padding")));
  };
  auto padded = add(input, SizeExpr(static_cast<int64_t>(pads)));
  if (!padded)
    return overflow();
  KILN_TRY_VOID(requireAtLeast(context, *padded, static_cast<int64_t>(span), fits));
  auto shifted = add(*padded, SizeExpr(static_cast<int64_t>(-span)));
  auto divided = shifted ? floorDiv(*shifted, stride) : shifted;
  auto size = divided ? add(*divided, SizeExpr(1)) : divided;
  if (!size || size->upperBound() > kMaxElements)
    return overflow();
  return *size;
}


} // namespace

Expected<TensorType> inferMatMul(const InferContext &context) {
  const TensorType &a = operand(context, 0);
  const TensorType &b = operand(context, 1);
  KILN_TRY_VOID(requireSameDType(context));
  KILN_TRY_VOID(requireNumeric(context, 0));
  KILN_TRY_VOID(checkAccumulate(context, a.dtype));
  if (a.rank() < 2 || b.rank() < 2)
    return fail(context, ErrorCode::ShapeMismatch,
                "operands need rank >= 2, got {} and {} (unsqueeze vectors)", a.str(), b.str());
  bool transposeA = getBool(context.attrs, "transpose_a");
  bool transposeB = getBool(context.attrs, "transpose_b");
  SizeExpr m = a.size(a.rank() - (transposeA ? 1 : 2));
  SizeExpr ka = a.size(a.rank() - (transposeA ? 2 : 1));
  SizeExpr kb = b.size(b.rank() - (transposeB ? 1 : 2));
  SizeExpr n = b.size(b.rank() - (transposeB ? 2 : 1));
  if (ka != kb)
    return fail(context, ErrorCode::ShapeMismatch,
                "contraction dims differ: a {} has K = {}, b {} has K = {}", a.str(), ka.str(),
                b.str(), kb.str());
  KILN_TRY(std::vector<SizeExpr> shape, broadcastBatch(context, {"a", "b"}));
  shape.push_back(m);
  shape.push_back(n);
  return resultType(context, contractionResultType(context, a.dtype), std::move(shape));
}

Expected<TensorType> inferConv2D(const InferContext &context) {
  const TensorType &input = operand(context, 0);
  const TensorType &filter = operand(context, 1);
  KILN_TRY_VOID(requireSameDType(context));
  KILN_TRY_VOID(requireNumeric(context, 0));
  KILN_TRY_VOID(checkAccumulate(context, input.dtype));
  KILN_TRY(bool nhwc, layoutIsNhwc(context));
  KILN_TRY_VOID(requireRank(context, 0, 4, nhwc ? "input [N,H,W,C]" : "input [N,C,H,W]"));
  KILN_TRY_VOID(requireRank(context, 1, 4, nhwc ? "filter [O,KH,KW,I]" : "filter [O,I,KH,KW]"));
  KILN_TRY_VOID(requireInts(context, "stride", 2, 1));
  KILN_TRY_VOID(requireInts(context, "dilation", 2, 1));
  KILN_TRY_VOID(requireInts(context, "padding", 4, 0));
  int64_t groups = getInt(context.attrs, "groups");
  if (groups < 1)
    return fail(context, ErrorCode::InvalidArgument, "groups must be >= 1, got {}", groups);

  // Only the batch and spatial axes may be symbolic: channels and the filter
  // decide the weights and the kernel.
  KILN_TRY_VOID(requireStaticAxis(context, 0, nhwc ? 3 : 1, "the channel axis"));
  for (int64_t axis = 0; axis < 4; ++axis)
    KILN_TRY_VOID(requireStaticAxis(context, 1, axis, "the filter"));
  SizeExpr batch = input.size(0);
  int64_t channels = input.shape[nhwc ? 3 : 1];
  SizeExpr height = input.size(nhwc ? 1 : 2), width = input.size(nhwc ? 2 : 3);
  int64_t outChannels = filter.shape[0];
  int64_t filterChannels = filter.shape[nhwc ? 3 : 1];
  int64_t kernelH = filter.shape[nhwc ? 1 : 2], kernelW = filter.shape[nhwc ? 2 : 3];
  if (channels % groups != 0 || outChannels % groups != 0)
    return fail(context, ErrorCode::ShapeMismatch,
                "groups = {} must divide input channels ({}) and output channels ({})", groups,
                channels, outChannels);
  if (kernelH == 0 || kernelW == 0)
    return fail(context, ErrorCode::ShapeMismatch, "filter {} has an empty {}x{} window",
                shapeStr(filter.shape), kernelH, kernelW);
  if (filterChannels * groups != channels)
    return fail(context, ErrorCode::ShapeMismatch,
                "input has {} channels, filter expects {} (filter shape {}, groups {})", channels,
                filterChannels * groups, shapeStr(filter.shape), groups);
  const auto &stride = getInts(context.attrs, "stride");
  const auto &dilation = getInts(context.attrs, "dilation");
  const auto &padding = getInts(context.attrs, "padding");
  std::string fits = fmt::format(
      "the {}x{} filter (dilation {}x{}) does not fit the {}x{} input with padding {}", kernelH,
      kernelW, dilation[0], dilation[1], height.str(), width.str(), shapeStr(padding));
  KILN_TRY(SizeExpr outH, windowOutputSize(context, height, kernelH, stride[0], padding[0],
                                           padding[1], dilation[0], fits));
  KILN_TRY(SizeExpr outW, windowOutputSize(context, width, kernelW, stride[1], padding[2],
                                           padding[3], dilation[1], fits));
  std::vector<SizeExpr> shape = nhwc ? std::vector<SizeExpr>{batch, outH, outW, outChannels}
                                     : std::vector<SizeExpr>{batch, outChannels, outH, outW};
  return resultType(context, contractionResultType(context, input.dtype), std::move(shape));
}

Expected<TensorType> inferPool2D(const InferContext &context) {
  const TensorType &input = operand(context, 0);
  KILN_TRY_VOID(requireNumeric(context, 0));
  if (context.kind == OpKind::AvgPool2D)
    KILN_TRY_VOID(requireFloat(context, 0));
  KILN_TRY(bool nhwc, layoutIsNhwc(context));
  KILN_TRY_VOID(requireRank(context, 0, 4, nhwc ? "input [N,H,W,C]" : "input [N,C,H,W]"));
  KILN_TRY_VOID(requireInts(context, "kernel", 2, 1));
  KILN_TRY_VOID(requireInts(context, "stride", 2, 1));
  KILN_TRY_VOID(requireInts(context, "padding", 4, 0));
  const auto &kernel = getInts(context.attrs, "kernel");
  const auto &stride = getInts(context.attrs, "stride");
  const auto &padding = getInts(context.attrs, "padding");
  if (!checkedNumElements(kernel))
    return fail(context, ErrorCode::InvalidArgument, "the {}x{} window has more than 2^53 elements",
                kernel[0], kernel[1]);
  for (int i = 0; i < 4; ++i)
    if (padding[i] >= kernel[i / 2])
      return fail(context, ErrorCode::InvalidArgument,
                  "padding {} must be smaller than the kernel {} on every side", shapeStr(padding),
                  shapeStr(kernel));
  SizeExpr height = input.size(nhwc ? 1 : 2), width = input.size(nhwc ? 2 : 3);
  // Every window must cover some input, or max pooling would return padding.
  std::string empty = fmt::format("input {} has an empty spatial axis", input.str());
  KILN_TRY_VOID(requireAtLeast(context, height, 1, empty));
  KILN_TRY_VOID(requireAtLeast(context, width, 1, empty));
  std::string fits = fmt::format("the {}x{} window does not fit the {}x{} input with padding {}",
                                 kernel[0], kernel[1], height.str(), width.str(),
                                 shapeStr(padding));
  KILN_TRY(SizeExpr outH, windowOutputSize(context, height, kernel[0], stride[0], padding[0],
                                           padding[1], 1, fits));
  KILN_TRY(SizeExpr outW, windowOutputSize(context, width, kernel[1], stride[1], padding[2],
                                           padding[3], 1, fits));
  std::vector<SizeExpr> shape = input.sizes();
  shape[nhwc ? 1 : 2] = outH;
  shape[nhwc ? 2 : 3] = outW;
  return resultType(context, input.dtype, std::move(shape));
}

Expected<TensorType> inferGlobalAvgPool(const InferContext &context) {
  KILN_TRY_VOID(requireFloat(context, 0));
  KILN_TRY(bool nhwc, layoutIsNhwc(context));
  KILN_TRY_VOID(requireRank(context, 0, 4, nhwc ? "input [N,H,W,C]" : "input [N,C,H,W]"));
  const TensorType &input = operand(context, 0);
  std::string empty = fmt::format("H and W of {} must be non-empty", input.str());
  KILN_TRY_VOID(requireAtLeast(context, input.size(nhwc ? 1 : 2), 1, empty));
  KILN_TRY_VOID(requireAtLeast(context, input.size(nhwc ? 2 : 3), 1, empty));
  // The mean divides by H*W: a symbolic spatial size would need it at run time.
  KILN_TRY_VOID(requireStaticAxis(context, 0, nhwc ? 1 : 2, "the pooled height"));
  KILN_TRY_VOID(requireStaticAxis(context, 0, nhwc ? 2 : 3, "the pooled width"));
  std::vector<SizeExpr> shape = input.sizes();
  shape[nhwc ? 1 : 2] = SizeExpr(1);
  shape[nhwc ? 2 : 3] = SizeExpr(1);
  return resultType(context, input.dtype, std::move(shape));
}

Expected<TensorType> inferAttention(const InferContext &context) {
  const TensorType &q = operand(context, 0);
  const TensorType &k = operand(context, 1);
  const TensorType &v = operand(context, 2);
  KILN_TRY_VOID(requireSameDType(context, 3));
  KILN_TRY_VOID(requireFloat(context, 0));
  if (q.rank() < 2 || k.rank() < 2 || v.rank() < 2)
    return fail(context, ErrorCode::ShapeMismatch, "q, k and v need rank >= 2, got {}, {}, {}",
                q.str(), k.str(), v.str());
  // A symbolic size may sit in the batch axes (a batch of sequences); each sequence's queries,
  // keys and head dims are static (the causal mask and the softmax rows are built from them).
  for (size_t i = 0; i < 3; ++i) {
    const TensorType &operandType = operand(context, i);
    for (int64_t axis = operandType.rank() - 2; axis < operandType.rank(); ++axis)
      KILN_TRY_VOID(requireStaticAxis(context, i, axis, "a sequence's length and head dim"));
  }
  int64_t depth = q.shape.back(), keyDepth = k.shape.back();
  int64_t keys = k.shape[k.rank() - 2], values = v.shape[v.rank() - 2];
  if (depth != keyDepth)
    return fail(context, ErrorCode::ShapeMismatch, "q {} and k {} have different head dims",
                q.str(), k.str());
  if (keys != values)
    return fail(context, ErrorCode::ShapeMismatch, "k {} and v {} have different sequence lengths",
                k.str(), v.str());
  if (keys == 0)
    return fail(context, ErrorCode::ShapeMismatch, "no keys to attend to: k is {}", k.str());
  double scale = getFloat(context.attrs, "scale");
  if (!std::isfinite(scale))
    return fail(context, ErrorCode::InvalidArgument, "scale must be finite, got {}", scale);
  int64_t queries = q.shape[q.rank() - 2];
  // Query i sees keys j <= i + (Lk - Lq); with Lq > Lk the first queries would
  // see no key at all and their softmax would be 0/0.
  if (getBool(context.attrs, "causal") && queries > keys)
    return fail(context, ErrorCode::ShapeMismatch,
                "causal attention needs at least as many keys as queries, got Lq = {} > Lk = {}",
                queries, keys);
  KILN_TRY(std::vector<SizeExpr> shape, broadcastBatch(context, {"q", "k", "v"}));
  if (context.operands.size() == 4) {
    // The mask broadcasts to the scores [..., Lq, Lk]; it does not widen them.
    const TensorType &mask = operand(context, 3);
    if (mask.dtype != DType::Bool && mask.dtype != q.dtype)
      return fail(context, ErrorCode::TypeMismatch,
                  "the mask {} must be bool (true attends) or {} (added to the scores)",
                  mask.str(), dtypeName(q.dtype));
    std::vector<SizeExpr> scores = shape;
    scores.push_back(queries);
    scores.push_back(keys);
    bool fits = mask.rank() <= static_cast<int64_t>(scores.size());
    for (int64_t d = 1; fits && d <= mask.rank(); ++d) {
      SizeExpr dim = mask.size(mask.rank() - d);
      fits = dim == SizeExpr(1) || dim == scores[scores.size() - static_cast<size_t>(d)];
    }
    if (!fits) {
      std::vector<std::string> dims;
      for (const SizeExpr &size : scores)
        dims.push_back(size.str());
      return fail(context, ErrorCode::ShapeMismatch,
                  "the mask {} does not broadcast to the scores [{}]", mask.str(),
                  fmt::join(dims, ","));
    }
  }
  shape.push_back(queries);
  shape.push_back(v.shape.back());
  return resultType(context, q.dtype, std::move(shape));
}

} // namespace kiln::ir
