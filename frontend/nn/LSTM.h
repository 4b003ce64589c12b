// nn::LSTM: a long short-term memory layer over a static sequence length,
// unrolled over time into matmul, sigmoid and tanh nodes.
#pragma once

#include "frontend/nn/Layer.h"
#include "frontend/nn/RecurrentStack.h"

namespace kiln::nn {

struct LSTMConfig {
  int64_t units = 0;
  /// true: the hidden state at every step, [B, T, D*units]; false: the last, [B, D*units]
  /// (D = 2 when bidirectional: the two directions side by side).
  bool returnSequences = false;
  /// Stacked layers, each reading the sequence of the one below (PyTorch's num_layers).
  int64_t layers = 1;
  /// A second recurrence per layer reads the sequence backwards.
  bool bidirectional = false;
  Initializer kernelInitializer = glorotUniform;
  /// Keras uses an orthogonal matrix here; Glorot keeps kiln free of a QR
  /// factorization and is close enough for untrained weights.
  Initializer recurrentInitializer = glorotUniform;
  /// Start the forget gate's bias at 1 (Jozefowicz et al. 2015; Keras's
  /// unit_forget_bias), the rest at 0.
  bool unitForgetBias = true;
  std::string name = {};
};

/// Input x [B, T, F] (batch-major). Parameters, with gates packed in the order
/// i, f, g, o (input, forget, cell candidate, output; PyTorch's and Keras's
/// order) along the last axis:
///   weight [F, 4U], recurrent_weight [U, 4U], bias [4U].
/// Each step t, from h = c = 0:
///   z = x_t @ weight + h @ recurrent_weight + bias
///   i = sigmoid(z_i), f = sigmoid(z_f), g = tanh(z_g), o = sigmoid(z_o)
///   c = f * c + i * g;  h = o * tanh(c)
class LSTM : public ConfiguredLayer<LSTMConfig> {
public:
  explicit LSTM(LSTMConfig config);
  explicit LSTM(int64_t units, bool returnSequences = false, std::string name = {});

  /// Applies the layer from initial states h0 and c0 ([layers * D, B, units]; empty for
  /// zeros) and returns the final states as well (PyTorch's `lstm(x, (h0, c0))`).
  RecurrentOutputs withState(Graph &graph, Tensor x, Tensor h0 = {}, Tensor c0 = {},
                             std::source_location loc = std::source_location::current());

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;

private:
  RecurrentOutputs run(Graph &graph, Tensor x, Tensor h0, Tensor c0, bool wantStates,
                       const std::source_location &loc);
};

} // namespace kiln::nn
