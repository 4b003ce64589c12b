// nn::MultiHeadAttention.
#include "frontend/nn/MultiHeadAttention.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln::nn {

namespace {

int64_t valueDimOf(const MultiHeadAttentionConfig &config) {
  return config.valueDim > 0 ? config.valueDim : config.keyDim;
}

// [B, L, H*D] -> [B, H, L, D]
Tensor splitHeads(Tensor x, int64_t heads, int64_t depth, const std::source_location &loc) {
  return transpose(reshape(x, {x.dim(0), x.dim(1), heads, depth}, loc), {0, 2, 1, 3}, loc);
}

// [B, H, L, D] -> [B, L, H*D]
Tensor mergeHeads(Tensor x, const std::source_location &loc) {
  Tensor t = transpose(x, {0, 2, 1, 3}, loc);
  return reshape(t, {t.dim(0), t.dim(1), t.dim(2) * t.dim(3)}, loc);
}

} // namespace

MultiHeadAttention::MultiHeadAttention(MultiHeadAttentionConfig config)
    : Layer("multi_head_attention", config.name), config_(std::move(config)),
      query_(config_.numHeads * config_.keyDim, Activation::Linear, config_.useBias, "query"),
      key_(config_.numHeads * config_.keyDim, Activation::Linear, config_.useBias, "key"),
      value_(config_.numHeads * valueDimOf(config_), Activation::Linear, config_.useBias, "value") {
}

MultiHeadAttention::MultiHeadAttention(int64_t numHeads, int64_t keyDim, bool causal,
                                       std::string name)
    : MultiHeadAttention(MultiHeadAttentionConfig{
          .numHeads = numHeads, .keyDim = keyDim, .causal = causal, .name = std::move(name)}) {}

Tensor MultiHeadAttention::operator()(Graph &graph, Tensor query, Tensor value,
                                      std::source_location loc) {
  return call(graph, {query, value}, loc, [&] { return attend(graph, query, value, loc); });
}

Tensor MultiHeadAttention::forward(Graph &graph, Tensor x, const std::source_location &loc) {
  return attend(graph, x, x, loc);
}

Tensor MultiHeadAttention::attend(Graph &graph, Tensor query, Tensor value,
                                  const std::source_location &loc) {
  const MultiHeadAttentionConfig &c = config_;
  if (c.numHeads <= 0 || c.keyDim <= 0)
    return fail(graph,
                fmt::format("numHeads ({}) and keyDim ({}) must be positive", c.numHeads, c.keyDim),
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
  Tensor attended = scaledDotProductAttention(q, k, v, c.causal, std::nullopt, loc);
  return (*output_)(graph, mergeHeads(attended, loc), loc);
}

} // namespace kiln::nn
