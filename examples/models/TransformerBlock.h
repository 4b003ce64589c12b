// A pre-LayerNorm transformer decoder block (GPT-2's), as a layer.
#pragma once

#include "frontend/nn/Dense.h"
#include "frontend/nn/LayerNorm.h"
#include "frontend/nn/MultiHeadAttention.h"

namespace kiln::examples {

/// GPT-2 small's sizes by default.
struct TransformerBlockConfig {
  Dim batch = 1; ///< a size, or a symbol: kiln::dim("N", 1, 8) (docs/dynamic-shapes.md)
  int64_t sequenceLength = 128;
  int64_t modelDim = 768;
  int64_t numHeads = 12;
  int64_t mlpDim = 3072;
  bool causal = true;
  double epsilon = 1e-5;
};

/// x [B, T, modelDim] ->
///   h = x + attn(ln_1(x))                 (causal multi-head self-attention)
///   y = h + mlp_proj(gelu_tanh(mlp_fc(ln_2(h))))
/// Sub-layers ln_1, attn, ln_2, mlp_fc, mlp_proj under the block's name.
class TransformerBlock : public nn::Layer {
public:
  explicit TransformerBlock(const TransformerBlockConfig &config = {}, std::string name = {});

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;

private:
  TransformerBlockConfig config_;
  nn::LayerNorm ln1_, ln2_;
  nn::MultiHeadAttention attention_;
  nn::Dense mlpFc_, mlpProj_;
};

/// One TransformerBlock on input "x" f32[batch, sequenceLength, modelDim];
/// output "y" of the same shape.
Tensor buildTransformerBlock(Graph &graph, const TransformerBlockConfig &config = {});

} // namespace kiln::examples
