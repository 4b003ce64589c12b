// Recurrent sequences unrolled over a static length: the LSTM and GRU recurrences that the
// nn layers (nn::LSTM, nn::GRU) and the ONNX importer's LSTM and GRU converters all build,
// written once with the gate layout as data.
#pragma once

#include "frontend/Tensor.h"

#include <source_location>

namespace kiln {

/// Where each LSTM gate's block lies along the packed 4 * units axis.
struct LstmGateOrder {
  int input = 0, forget = 1, cell = 2, output = 3; ///< PyTorch's and Keras's i, f, g, o
};
/// ONNX packs LSTM gates as i, o, f, c.
inline constexpr LstmGateOrder kOnnxLstmGates{.input = 0, .forget = 2, .cell = 3, .output = 1};

/// Where each GRU gate's block lies along the packed 3 * units axis.
struct GruGateOrder {
  int update = 0, reset = 1, candidate = 2; ///< ONNX's z, r, h
};
/// PyTorch packs GRU gates as r, z, n.
inline constexpr GruGateOrder kTorchGruGates{.update = 1, .reset = 0, .candidate = 2};

struct RecurrenceOptions {
  Tensor initialHidden; ///< [B, U]; empty: zeros
  Tensor initialCell;   ///< LSTM only: [B, U]; empty: zeros
  /// Run from the last step to the first; the sequence stays in input time order (step t
  /// holds the state after reading x_t .. x_{T-1}).
  bool reverse = false;
  /// Also build the [B, T, U] sequence of hidden states (else only the last state).
  bool keepSequence = true;
};

struct RecurrenceResult {
  Tensor sequence;   ///< [B, T, U] (when keepSequence)
  Tensor lastHidden; ///< [B, U]
  Tensor lastCell;   ///< LSTM only: [B, U]
};

/// An LSTM over x [B, T, F] with kernel [F, 4U], recurrent [U, 4U] and bias [4U] (empty for
/// none), gates packed in `gates` order. Each step:
///   z = x_t @ kernel + h @ recurrent + bias
///   i, f, o = sigmoid(z_i, z_f, z_o); g = tanh(z_g); c = f * c + i * g; h = o * tanh(c)
RecurrenceResult lstmSequence(Tensor x, Tensor kernel, Tensor recurrent, Tensor bias,
                              const RecurrenceOptions &options = {}, LstmGateOrder gates = {},
                              std::source_location loc = std::source_location::current());

/// A GRU over x [B, T, F] with kernel [F, 3U], recurrent [U, 3U] and the input and recurrent
/// biases [3U] (either may be empty). Each step, with linear-before-reset (PyTorch's form):
///   a = x_t @ kernel + inputBias;  b = h @ recurrent + recurrentBias
///   z = sigmoid(a_z + b_z); r = sigmoid(a_r + b_r); n = tanh(a_n + r * b_n)
///   h = (1 - z) * n + z * h
/// and without it n = tanh(a_n + (r * h) @ recurrent_n + recurrentBias_n).
RecurrenceResult gruSequence(Tensor x, Tensor kernel, Tensor recurrent, Tensor inputBias,
                             Tensor recurrentBias, const RecurrenceOptions &options = {},
                             GruGateOrder gates = {}, bool linearBeforeReset = true,
                             std::source_location loc = std::source_location::current());

} // namespace kiln
