// nn::GRU: a gated recurrent unit layer over a static sequence length, unrolled over time
// (frontend/Recurrence.h), in PyTorch's form.
#pragma once

#include "frontend/nn/Layer.h"
#include "frontend/nn/RecurrentStack.h"

namespace kiln::nn {

struct GRUConfig {
  int64_t units = 0;
  /// true: the hidden state at every step, [B, T, D*units]; false: the last, [B, D*units].
  bool returnSequences = false;
  int64_t layers = 1;
  bool bidirectional = false;
  Initializer kernelInitializer = glorotUniform;
  Initializer recurrentInitializer = glorotUniform;
  std::string name = {};
};

/// Input x [B, T, F]. Parameters, gates packed r, z, n (reset, update, candidate: PyTorch's
/// order) along the last axis: weight [F, 3U], recurrent_weight [U, 3U], bias and
/// recurrent_bias [3U], with the suffixes `_l<k>` and `_reverse` of nn::LSTM. Each step:
///   r = sigmoid(x W_r + b_r + h R_r + rb_r), z likewise,
///   n = tanh(x W_n + b_n + r * (h R_n + rb_n)),  h = (1 - z) * n + z * h
class GRU : public ConfiguredLayer<GRUConfig> {
public:
  explicit GRU(GRUConfig config);
  explicit GRU(int64_t units, bool returnSequences = false, std::string name = {});

  /// Applies the layer from the initial state h0 ([layers * D, B, units]; empty for zeros)
  /// and returns the final states as well (PyTorch's `gru(x, h0)`).
  RecurrentOutputs withState(Graph &graph, Tensor x, Tensor h0 = {},
                             std::source_location loc = std::source_location::current());

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;

private:
  RecurrentOutputs run(Graph &graph, Tensor x, Tensor h0, bool wantStates,
                       const std::source_location &loc);
};

} // namespace kiln::nn
