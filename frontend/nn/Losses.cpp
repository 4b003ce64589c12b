// softmaxCrossEntropy and meanSquaredError, built from DSL ops.
#include "frontend/nn/Losses.h"

#include "frontend/Graph.h"
#include "frontend/Ops.h"

#include <cmath>
#include <fmt/format.h>
#include <numeric>

namespace kiln::nn {

namespace {

/// Losses reduce in f32 (f64 stays f64): a bf16 or f16 sum over a batch
/// would lose the small per-example terms that make the loss fall.
DType lossComputeDType(DType dtype) { return dtype == DType::F64 ? DType::F64 : DType::F32; }

Tensor castTo(Tensor x, DType dtype, const std::source_location &loc) {
  return x.dtype() == dtype ? x : cast(x, dtype, loc);
}

/// The first operand that is not ok (poisoned or empty), or nullptr. A loss of
/// a poisoned operand is that poison: the graph already holds the error.
const Tensor *firstNotOk(const Tensor &a, const Tensor &b) {
  if (!a.ok())
    return &a;
  if (!b.ok())
    return &b;
  return nullptr;
}

Tensor failLoss(const Tensor &on, std::string_view loss, std::string message,
                const std::source_location &loc, ErrorCode code = ErrorCode::ShapeMismatch) {
  return on.graph()->fail(Error(code, fmt::format("{}: {}", loss, message)), loc);
}

} // namespace

Tensor softmaxCrossEntropy(Tensor logits, Tensor labels, double labelSmoothing,
                           std::source_location loc) {
  constexpr std::string_view kName = "softmaxCrossEntropy";
  if (const Tensor *bad = firstNotOk(logits, labels))
    return *bad;
  if (logits.graph() != labels.graph())
    return failLoss(logits, kName, "logits and labels belong to different graphs", loc,
                    ErrorCode::InvalidArgument);
  if (logits.rank() != 2 || !isFloatingPoint(logits.dtype()))
    return failLoss(logits, kName,
                    fmt::format("logits must be a float [N, C] tensor, got {}", logits.str()), loc,
                    logits.rank() != 2 ? ErrorCode::ShapeMismatch : ErrorCode::TypeMismatch);
  if (labels.dtype() != DType::I32 && labels.dtype() != DType::I64)
    return failLoss(logits, kName,
                    fmt::format("labels must be i32 or i64 class indices, got {}", labels.str()),
                    loc, ErrorCode::TypeMismatch);
  int64_t batch = logits.dim(0), classes = logits.dim(1);
  ir::SizeExpr rows = logits.type().size(0);
  if (labels.rank() != 1 || labels.type().size(0) != rows)
    return failLoss(logits, kName,
                    fmt::format("labels must be [{}] (one per row of logits {}), got {}",
                                rows.str(), logits.str(), labels.str()),
                    loc);
  if (batch == 0 || classes == 0)
    return failLoss(logits, kName,
                    fmt::format("logits {} has no rows or no classes", logits.str()), loc);
  if (!(labelSmoothing >= 0.0 && labelSmoothing <= 1.0))
    return failLoss(logits, kName,
                    fmt::format("labelSmoothing must be in [0, 1], got {}", labelSmoothing), loc,
                    ErrorCode::InvalidArgument);

  Graph &graph = *logits.graph();
  DType compute = lossComputeDType(logits.dtype());
  // log_softmax subtracts the row maximum before exp, so logits of 1e4 give
  // finite log-probabilities; exp of the raw logits would overflow.
  Tensor logProbs = logSoftmax(castTo(logits, compute, loc), -1, loc);
  Tensor classIds = iota(graph, {1, classes}, 1, labels.dtype(), loc);
  Tensor isLabel = eq(classIds, unsqueeze(labels, {1}, loc), loc);
  // The smoothed target as a select of two splats: elementwise, so it fuses
  // into the reduction over weights * logProbs.
  double offWeight = labelSmoothing / static_cast<double>(classes);
  double onWeight = 1.0 - labelSmoothing + offWeight;
  Tensor weights = where(isLabel, constant(graph, onWeight, {}, compute, loc),
                         constant(graph, offWeight, {}, compute, loc), loc);
  Tensor total = reduceSum(mul(weights, logProbs, loc), {0, 1}, false, loc);
  if (rows.isConstant())
    return mul(total, constant(graph, -1.0 / static_cast<double>(batch), {}, compute, loc), loc);
  // A symbolic batch: the mean over the run's rows.
  return div(neg(total, loc), sizeOf(logits, {0}, compute, loc), loc);
}

Tensor meanSquaredError(Tensor prediction, Tensor target, std::source_location loc) {
  constexpr std::string_view kName = "meanSquaredError";
  if (const Tensor *bad = firstNotOk(prediction, target))
    return *bad;
  if (prediction.graph() != target.graph())
    return failLoss(prediction, kName, "prediction and target belong to different graphs", loc,
                    ErrorCode::InvalidArgument);
  if (!isFloatingPoint(prediction.dtype()) || prediction.dtype() != target.dtype())
    return failLoss(prediction, kName,
                    fmt::format("prediction and target must have the same float dtype, got {} "
                                "and {}",
                                prediction.str(), target.str()),
                    loc, ErrorCode::TypeMismatch);
  if (prediction.shape() != target.shape())
    return failLoss(prediction, kName,
                    fmt::format("prediction {} and target {} must have the same shape",
                                prediction.str(), target.str()),
                    loc);
  if (prediction.numElements() == 0)
    return failLoss(prediction, kName,
                    fmt::format("prediction {} has no elements", prediction.str()), loc);

  DType compute = lossComputeDType(prediction.dtype());
  Tensor difference =
      sub(castTo(prediction, compute, loc), castTo(target, compute, loc), loc);
  Tensor squares = mul(difference, difference, loc);
  if (prediction.rank() == 0)
    return squares;
  std::vector<int64_t> axes(static_cast<size_t>(prediction.rank()));
  std::iota(axes.begin(), axes.end(), 0);
  return reduceMean(squares, std::move(axes), false, loc);
}

} // namespace kiln::nn
