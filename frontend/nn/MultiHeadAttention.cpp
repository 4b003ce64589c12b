// nn::MultiHeadAttention.
#include "frontend/nn/MultiHeadAttention.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln::nn {

namespace {

int64_t valueDimOf(const MultiHeadAttentionConfig &config) {
  return config.valueDim > 0 ? config.valueDim : config.keyDim;
}

/// heads * depth, the width of a projection; 0 when it is not a valid size
/// (a non-positive factor, or a product over 2^53). The constructor builds
/// its sub-layers from it before anything is checked; attend() then reports
/// the configuration error before those layers are used.
int64_t projectionWidth(int64_t heads, int64_t depth) {
  int64_t width = 0;
  if (heads <= 0 || depth <= 0 || __builtin_mul_overflow(heads, depth, &width) ||
      width > ir::kMaxElements)
    return 0;
  return width;
}

// [B, L, H*D] -> [B, H, L, D]. B is inferred (-1): a symbolic batch stays symbolic.
Tensor splitHeads(Tensor x, int64_t heads, int64_t depth, const std::source_location &loc) {
  return transpose(reshape(x, {-1, x.dim(1), heads, depth}, loc), {0, 2, 1, 3}, loc);
}

// [B, H, L, D] -> [B, L, H*D]
Tensor mergeHeads(Tensor x, const std::source_location &loc) {
  Tensor t = transpose(x, {0, 2, 1, 3}, loc);
  return reshape(t, {-1, t.dim(1), t.dim(2) * t.dim(3)}, loc);
}

} // namespace

MultiHeadAttention::MultiHeadAttention(MultiHeadAttentionConfig config)
    : ConfiguredLayer("multi_head_attention", std::move(config)),
      query_(projectionWidth(config_.numHeads, config_.keyDim), Activation::Linear, config_.useBias,
             "query"),
      key_(projectionWidth(config_.numHeads, config_.keyDim), Activation::Linear, config_.useBias,
           "key"),
      value_(projectionWidth(config_.numHeads, valueDimOf(config_)), Activation::Linear,
             config_.useBias, "value") {}

MultiHeadAttention::MultiHeadAttention(int64_t numHeads, int64_t keyDim, bool causal,
                                       std::string name)
    : MultiHeadAttention(MultiHeadAttentionConfig{
          .numHeads = numHeads, .keyDim = keyDim, .causal = causal, .name = std::move(name)}) {}

Tensor MultiHeadAttention::operator()(Graph &graph, Tensor query, Tensor value,
                                      std::source_location loc) {
  return call(graph, {query, value}, loc, [&] { return attend(graph, query, value, {}, loc); });
}

Tensor MultiHeadAttention::operator()(Graph &graph, Tensor query, Tensor value,
                                      Tensor keyPaddingMask, std::source_location loc) {
  return call(graph, {query, value, keyPaddingMask}, loc,
              [&] { return attend(graph, query, value, keyPaddingMask, loc); });
}

Tensor MultiHeadAttention::forward(Graph &graph, Tensor x, const std::source_location &loc) {
  return attend(graph, x, x, {}, loc);
}

Tensor MultiHeadAttention::attend(Graph &graph, Tensor query, Tensor value,
                                  Tensor keyPaddingMask, const std::source_location &loc) {
  const MultiHeadAttentionConfig &c = config_;
  if (c.numHeads <= 0 || c.keyDim <= 0)
    return fail(graph,
                fmt::format("numHeads ({}) and keyDim ({}) must be positive", c.numHeads, c.keyDim),
                loc);
  if (c.valueDim < 0 || c.outputDim < 0)
    return fail(graph,
                fmt::format("valueDim ({}) and outputDim ({}) must be positive, or 0 for the "
                            "default",
                            c.valueDim, c.outputDim),
                loc);
  if (projectionWidth(c.numHeads, c.keyDim) == 0 || projectionWidth(c.numHeads, valueDimOf(c)) == 0)
    return fail(graph,
                fmt::format("numHeads * keyDim ({} * {}) and numHeads * valueDim ({} * {}) must "
                            "be at most 2^53",
                            c.numHeads, c.keyDim, c.numHeads, valueDimOf(c)),
                loc);
  if (query.rank() != 3 || value.rank() != 3)
    return fail(graph,
                fmt::format("query and value must be [batch, length, features], got {} and {}",
                            query.str(), value.str()),
                loc, ErrorCode::ShapeMismatch);
  int64_t outputDim = c.outputDim > 0 ? c.outputDim : query.dim(2);
  if (!output_ || output_->config().units != outputDim)
    output_.emplace(outputDim, Activation::Linear, c.useBias, "output");

  Tensor q = splitHeads(query_(graph, query, loc), c.numHeads, c.keyDim, loc);
  Tensor k = splitHeads(key_(graph, value, loc), c.numHeads, c.keyDim, loc);
  Tensor v = splitHeads(value_(graph, value, loc), c.numHeads, valueDimOf(c), loc);
  Tensor attended;
  if (keyPaddingMask.empty()) {
    attended = scaledDotProductAttention(q, k, v, c.causal, std::nullopt, loc);
  } else {
    // Compared as sizes: a symbolic batch's mask must have that batch, not its upper bound.
    std::vector<ir::SizeExpr> expected{value.type().size(0), value.type().size(1)};
    if (keyPaddingMask.dtype() != DType::Bool || keyPaddingMask.type().sizes() != expected)
      return fail(graph,
                  fmt::format("the key padding mask must be {} (batch, keys), got {}",
                              ir::makeTensorType(DType::Bool, expected).value().str(),
                              keyPaddingMask.str()),
                  loc, ErrorCode::ShapeMismatch);
    // [B, Lk] "is padding" -> [B, 1, 1, Lk] "attends", broadcast over heads and queries.
    Tensor attends = reshape(logicalNot(keyPaddingMask, loc), {-1, 1, 1, value.dim(1)}, loc);
    attended = scaledDotProductAttention(q, k, v, attends, c.causal, std::nullopt, loc);
  }
  return (*output_)(graph, mergeHeads(attended, loc), loc);
}

} // namespace kiln::nn
