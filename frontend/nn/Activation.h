// Activations a layer can apply to its output, by name.
#pragma once

#include "frontend/Tensor.h"

#include <source_location>
#include <string_view>

namespace kiln::nn {

/// A layer's output activation (Keras's `activation=` argument).
enum class Activation : uint8_t {
  Linear, ///< identity
  Relu,
  Sigmoid,
  Tanh,
  Gelu,     ///< erf form
  GeluTanh, ///< tanh approximation (GPT-2)
  Silu,
  Softmax,    ///< over the last axis
  LogSoftmax, ///< over the last axis
  Relu6,
  HardSigmoid, ///< PyTorch's: relu6(x + 3) / 6
  HardSwish,
  Softplus,
  Mish,
  LeakyRelu, ///< slope 0.01
  Elu,       ///< alpha 1
};

std::string_view activationName(Activation activation);

/// Applies `activation` to `x` (no node for Linear).
Tensor applyActivation(Tensor x, Activation activation,
                       std::source_location loc = std::source_location::current());

} // namespace kiln::nn
