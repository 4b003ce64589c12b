// nn::MultiHeadAttention: projections to heads, scaled dot-product attention
// per head, and an output projection.
#pragma once

#include "frontend/nn/Dense.h"
#include "frontend/nn/Layer.h"

#include <optional>

namespace kiln::nn {

struct MultiHeadAttentionConfig {
  int64_t numHeads = 0;
  /// Size of each head's queries and keys.
  int64_t keyDim = 0;
  /// Size of each head's values; 0 means keyDim.
  int64_t valueDim = 0;
  /// Size of the result's last axis; 0 means the query's.
  int64_t outputDim = 0;
  /// Query i attends to keys j <= i (a decoder's mask).
  bool causal = false;
  bool useBias = true;
  std::string name = {};
};

/// Inputs are [B, L, E]. Sub-layers (Dense, named query, key, value, output,
/// so parameters are "<name>.query.weight" and so on):
///   q = query(x) [B, Lq, H*Dk] -> [B, H, Lq, Dk]  (reshape + transpose)
///   k, v likewise from the key/value input
///   a = scaled_dot_product_attention(q, k, v, causal, scale = 1/sqrt(Dk))
///   result = output(a -> [B, Lq, H*Dv])
class MultiHeadAttention : public ConfiguredLayer<MultiHeadAttentionConfig> {
public:
  explicit MultiHeadAttention(MultiHeadAttentionConfig config);
  MultiHeadAttention(int64_t numHeads, int64_t keyDim, bool causal = false, std::string name = {});

  /// Self-attention: layer(graph, x).
  using Layer::operator();
  /// Cross-attention: queries from `query`, keys and values from `value`.
  Tensor operator()(Graph &graph, Tensor query, Tensor value,
                    std::source_location loc = std::source_location::current());
  /// With a key padding mask: bool [B, Lk], true where the key is padding and must not be
  /// attended to (PyTorch's key_padding_mask).
  Tensor operator()(Graph &graph, Tensor query, Tensor value, Tensor keyPaddingMask,
                    std::source_location loc = std::source_location::current());

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;

private:
  Tensor attend(Graph &graph, Tensor query, Tensor value, Tensor keyPaddingMask,
                const std::source_location &loc);

  Dense query_, key_, value_;
  std::optional<Dense> output_; // its width is the query's, known on the first call
};

} // namespace kiln::nn
