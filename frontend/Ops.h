// The DSL's op functions: one free function (or a few overloads) for every op
// of ir/graph/Ops.def, plus a few helpers (flatten, sliceAxis, scalarLike).
//
// Every function takes a trailing std::source_location defaulted to the
// caller's line, and records it on the node: errors and printed IR point at
// the user's code. On bad operands a function returns a poisoned Tensor and
// the Graph keeps the error (see Graph.h).
#pragma once

#include "frontend/Graph.h"
#include "frontend/Padding.h"
#include "frontend/Tensor.h"

#include <array>
#include <optional>
#include <source_location>
#include <span>
#include <vector>

namespace kiln {

#define KILN_LOC std::source_location loc = std::source_location::current()

// ---- Elementwise, unary
// ---------------------------------------------------------------------------

Tensor neg(Tensor x, KILN_LOC);
Tensor abs(Tensor x, KILN_LOC);
Tensor exp(Tensor x, KILN_LOC);
Tensor log(Tensor x, KILN_LOC);
Tensor sqrt(Tensor x, KILN_LOC);
Tensor rsqrt(Tensor x, KILN_LOC);
Tensor tanh(Tensor x, KILN_LOC);
Tensor sigmoid(Tensor x, KILN_LOC);
Tensor relu(Tensor x, KILN_LOC);
/// The erf form x * Phi(x), or its tanh approximation (GPT-2's "gelu_new").
enum class GeluApproximation : uint8_t { None, Tanh };
Tensor gelu(Tensor x, GeluApproximation approximate = GeluApproximation::None, KILN_LOC);
Tensor silu(Tensor x, KILN_LOC);
Tensor erf(Tensor x, KILN_LOC);
Tensor sin(Tensor x, KILN_LOC);
Tensor cos(Tensor x, KILN_LOC);
/// Logical not of a bool tensor (op `not`).
Tensor logicalNot(Tensor x, KILN_LOC);
Tensor cast(Tensor x, DType dtype, KILN_LOC);
Tensor clamp(Tensor x, double min, double max, KILN_LOC);

// ---- Elementwise, binary and ternary (NumPy broadcasting)
// -------------------------------------------

Tensor add(Tensor a, Tensor b, KILN_LOC);
Tensor sub(Tensor a, Tensor b, KILN_LOC);
Tensor mul(Tensor a, Tensor b, KILN_LOC);
Tensor div(Tensor a, Tensor b, KILN_LOC);
Tensor pow(Tensor a, Tensor b, KILN_LOC);
Tensor pow(Tensor a, double exponent, KILN_LOC);
/// Elementwise maximum (op `max`; the reduction is reduceMax).
Tensor maximum(Tensor a, Tensor b, KILN_LOC);
Tensor maximum(Tensor a, double b, KILN_LOC);
/// Elementwise minimum (op `min`; the reduction is reduceMin).
Tensor minimum(Tensor a, Tensor b, KILN_LOC);
Tensor minimum(Tensor a, double b, KILN_LOC);
Tensor eq(Tensor a, Tensor b, KILN_LOC);
Tensor eq(Tensor a, double b, KILN_LOC);
Tensor ne(Tensor a, Tensor b, KILN_LOC);
Tensor ne(Tensor a, double b, KILN_LOC);
Tensor lt(Tensor a, Tensor b, KILN_LOC);
Tensor le(Tensor a, Tensor b, KILN_LOC);
Tensor gt(Tensor a, Tensor b, KILN_LOC);
Tensor ge(Tensor a, Tensor b, KILN_LOC);
Tensor logicalAnd(Tensor a, Tensor b, KILN_LOC);
Tensor logicalOr(Tensor a, Tensor b, KILN_LOC);
/// cond ? a : b, all three broadcast; cond is bool.
Tensor where(Tensor cond, Tensor a, Tensor b, KILN_LOC);

// ---- Activations that are composite elementwise ops of the op table: one node each,
// which the compiler decomposes into primitives before fusion (so each still fuses into
// one loop with its neighbours). ActivationOps.cpp; decompositions in
// ir/graph/ElementwiseDecompositions.cpp.

/// min(max(x, 0), 6): MobileNet's ReLU6.
Tensor relu6(Tensor x, KILN_LOC);
/// clamp(alpha * x + beta, 0, 1); the defaults are PyTorch's (relu6(x + 3) / 6), ONNX's
/// HardSigmoid defaults to alpha = 0.2.
Tensor hardSigmoid(Tensor x, double alpha = 1.0 / 6.0, double beta = 0.5, KILN_LOC);
/// x * hardSigmoid(x): MobileNetV3's hardswish.
Tensor hardSwish(Tensor x, KILN_LOC);
/// log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (PyTorch's
/// softplus; an infinite threshold is ONNX's); computed as relu(y) + log(1 + exp(-|y|)) so
/// a large x cannot overflow.
Tensor softplus(Tensor x, double beta = 1.0, double threshold = 20.0, KILN_LOC);
/// x * tanh(softplus(x)).
Tensor mish(Tensor x, KILN_LOC);
/// x where x >= 0, slope * x below.
Tensor leakyRelu(Tensor x, double slope = 0.01, KILN_LOC);
/// x where x > 0, alpha * (exp(x) - 1) below.
Tensor elu(Tensor x, double alpha = 1.0, KILN_LOC);

/// A rank-0 splat constant of `like`'s dtype, for mixing tensors with C++
/// scalars. Fails when `value` is not exactly representable in an integer or
/// bool dtype (0.5 would silently become 0).
Tensor scalarLike(Tensor like, double value, KILN_LOC);

// ---- Reductions
// -----------------------------------------------------------------------------------

/// Axes may be negative (counting from the end) and must be distinct.
Tensor reduceSum(Tensor x, std::vector<int64_t> axes, bool keepdims = false, KILN_LOC);
Tensor reduceMean(Tensor x, std::vector<int64_t> axes, bool keepdims = false, KILN_LOC);
Tensor reduceMax(Tensor x, std::vector<int64_t> axes, bool keepdims = false, KILN_LOC);
Tensor reduceMin(Tensor x, std::vector<int64_t> axes, bool keepdims = false, KILN_LOC);
Tensor reduceProd(Tensor x, std::vector<int64_t> axes, bool keepdims = false, KILN_LOC);
/// i64 index of the first maximum along `axis`.
Tensor argmax(Tensor x, int64_t axis, bool keepdims = false, KILN_LOC);
Tensor argmin(Tensor x, int64_t axis, bool keepdims = false, KILN_LOC);

// ---- Contractions and windows
// ---------------------------------------------------------------------

struct MatMulOptions {
  bool transposeA = false;
  bool transposeB = false;
  /// Accumulator dtype; unset picks f32 for f32/f16/bf16/f8, f64 for f64,
  /// i32 for i32/i8 and i64 for i64.
  std::optional<DType> accumulate = std::nullopt;
  /// f32 only: allow tf32 tensor-core compute.
  bool allowTf32 = false;
};
/// a[..., M, K] @ b[..., K, N], batch dims broadcast. C++ has no `@`: this is it.
Tensor matmul(Tensor a, Tensor b, MatMulOptions options = {}, KILN_LOC);

struct Conv2DOptions {
  std::array<int64_t, 2> stride = {1, 1};
  /// valid, same (resolved here into explicit pads) or explicit.
  Padding padding = Padding::valid();
  std::array<int64_t, 2> dilation = {1, 1};
  int64_t groups = 1;
  /// nchw: x [N,C,H,W], filter [O, C/groups, KH, KW]; nhwc: x [N,H,W,C],
  /// filter [O, KH, KW, C/groups].
  Layout layout = Layout::NCHW;
  std::optional<DType> accumulate = std::nullopt;
  bool allowTf32 = false;
};
Tensor conv2d(Tensor x, Tensor filter, Conv2DOptions options = {}, KILN_LOC);

struct Pool2DOptions {
  std::array<int64_t, 2> kernel = {2, 2};
  /// {0, 0} means "equal to the kernel" (non-overlapping windows).
  std::array<int64_t, 2> stride = {0, 0};
  Padding padding = Padding::valid();
  Layout layout = Layout::NCHW;
  /// avgPool2d only: divide by the full window, padding included (PyTorch's and ONNX's
  /// default), or by the input elements the window covers.
  bool countIncludePad = true;
  /// Size the output with ceil rather than floor, as PyTorch's ceil_mode: a last window that
  /// overhangs the bottom/right edge (and starts inside the input or its top/left padding)
  /// is kept. Resolved here into extra bottom/right padding, which max pooling ignores;
  /// avgPool2d counts it out, so with countIncludePad an overhanging window is an error.
  bool ceilMode = false;
};
Tensor maxPool2d(Tensor x, Pool2DOptions options = {}, KILN_LOC);
Tensor avgPool2d(Tensor x, Pool2DOptions options = {}, KILN_LOC);
/// Mean over H and W, keeping them as size 1.
Tensor globalAvgPool(Tensor x, Layout layout = Layout::NCHW, KILN_LOC);

// ---- Normalizations and attention
// -----------------------------------------------------------------

Tensor softmax(Tensor x, int64_t axis = -1, KILN_LOC);
Tensor logSoftmax(Tensor x, int64_t axis = -1, KILN_LOC);
/// Normalizes over axes [axis, rank); scale and bias have shape x.shape[axis:].
Tensor layerNorm(Tensor x, Tensor scale, Tensor bias, int64_t axis = -1, double epsilon = 1e-5,
                 KILN_LOC);
/// Inference batch norm per channel `axis`; scale, bias, mean, var are [C].
Tensor batchNorm(Tensor x, Tensor scale, Tensor bias, Tensor mean, Tensor var, int64_t axis = 1,
                 double epsilon = 1e-5, KILN_LOC);
/// softmax(q @ k^T * scale [+ causal mask]) @ v with q [..., Lq, D],
/// k [..., Lk, D], v [..., Lk, Dv]. `scale` defaults to 1 / sqrt(D).
Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, bool causal = false,
                                 std::optional<double> scale = std::nullopt, KILN_LOC);
/// The same with a mask broadcast to the scores [..., Lq, Lk]: bool (true attends; a query
/// that attends to no key gives NaN, as PyTorch's) or, in q's dtype, added to the scores
/// (-inf hides a key). Combined with `causal` when both are given.
Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, Tensor mask, bool causal = false,
                                 std::optional<double> scale = std::nullopt, KILN_LOC);

// ---- Data movement
// --------------------------------------------------------------------------------

/// New shape, same elements in row-major order. One entry may be -1: it is
/// resolved here from the element count.
Tensor reshape(Tensor x, std::vector<int64_t> shape, KILN_LOC);
/// The same to sizes that may be symbolic ([N, 3, 49]): one entry may be -1, the element
/// count divided by the others, which must divide it for every value of the symbols.
Tensor reshapeSizes(Tensor x, std::vector<ir::SizeExpr> sizes, KILN_LOC);
/// Collapses axes [startAxis, rank) into one: [N, C, H, W] -> [N, C*H*W].
Tensor flatten(Tensor x, int64_t startAxis = 1, KILN_LOC);
/// Result axis i is input axis perm[i].
Tensor transpose(Tensor x, std::vector<int64_t> perm, KILN_LOC);
Tensor broadcastTo(Tensor x, std::vector<int64_t> shape, KILN_LOC);
/// x[starts:stops:steps] per axis (one entry per axis; steps default to 1).
Tensor slice(Tensor x, std::vector<int64_t> starts, std::vector<int64_t> stops,
             std::vector<int64_t> steps = {}, KILN_LOC);
/// x[..., start:stop:step, ...] on one axis, the others whole.
Tensor sliceAxis(Tensor x, int64_t axis, int64_t start, int64_t stop, int64_t step = 1, KILN_LOC);
Tensor concat(std::span<const Tensor> xs, int64_t axis, KILN_LOC);
Tensor concat(std::initializer_list<Tensor> xs, int64_t axis, KILN_LOC);
/// Constant padding: `low[i]` elements before and `high[i]` after axis i.
Tensor pad(Tensor x, std::vector<int64_t> low, std::vector<int64_t> high, double value = 0.0,
           KILN_LOC);
/// take(data, indices, axis): result shape data[:axis] + indices + data[axis+1:].
Tensor gather(Tensor data, Tensor indices, int64_t axis = 0, KILN_LOC);
Tensor takeAlongAxis(Tensor data, Tensor indices, int64_t axis, KILN_LOC);
Tensor squeeze(Tensor x, std::vector<int64_t> axes, KILN_LOC);
Tensor unsqueeze(Tensor x, std::vector<int64_t> axes, KILN_LOC);

// ---- Leaves
// ---------------------------------------------------------------------------------------

/// 0, 1, 2, ... along `axis`, broadcast over the other axes.
Tensor iota(Graph &graph, Shape shape, int64_t axis, DType dtype = DType::I64, KILN_LOC);
/// The product of `x`'s sizes over `axes` as a scalar of `dtype`: a constant when they are
/// static, else the run's value (symbol_size), e.g. the row count a mean over a symbolic
/// batch divides by.
Tensor sizeOf(Tensor x, std::vector<int64_t> axes, DType dtype = DType::F32, KILN_LOC);
/// A literal copy of `value`.
Tensor constant(Graph &graph, const HostTensor &value, KILN_LOC);
/// `value` splatted over `shape`.
Tensor constant(Graph &graph, double value, Shape shape = {}, DType dtype = DType::F32, KILN_LOC);

#undef KILN_LOC

} // namespace kiln
