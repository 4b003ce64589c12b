// A pre-LayerNorm transformer decoder block.
#include "examples/models/TransformerBlock.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln::examples {

using namespace kiln::nn;

TransformerBlock::TransformerBlock(const TransformerBlockConfig &config, std::string name)
    : Layer("transformer_block", std::move(name)), config_(config),
      ln1_({.axis = -1, .epsilon = config.epsilon, .name = "ln_1"}),
      ln2_({.axis = -1, .epsilon = config.epsilon, .name = "ln_2"}),
      attention_({.numHeads = config.numHeads,
                  .keyDim = config.numHeads > 0 ? config.modelDim / config.numHeads : 0,
                  .causal = config.causal,
                  .name = "attn"}),
      mlpFc_(config.mlpDim, Activation::GeluTanh, true, "mlp_fc"),
      mlpProj_(config.modelDim, Activation::Linear, true, "mlp_proj") {}

Tensor TransformerBlock::forward(Graph &graph, Tensor x, const std::source_location &loc) {
  if (config_.numHeads <= 0 || config_.modelDim % config_.numHeads != 0)
    return fail(graph,
                fmt::format("modelDim ({}) must be a multiple of numHeads ({})", config_.modelDim,
                            config_.numHeads),
                loc);
  Tensor h = add(x, attention_(graph, ln1_(graph, x, loc), loc), loc);
  return add(h, mlpProj_(graph, mlpFc_(graph, ln2_(graph, h, loc), loc), loc), loc);
}

Tensor buildTransformerBlock(Graph &graph, const TransformerBlockConfig &config) {
  Tensor x = graph.input("x", {config.batch, config.sequenceLength, config.modelDim});
  Tensor y = TransformerBlock(config)(graph, x);
  graph.output("y", y);
  return y;
}

} // namespace kiln::examples
