// Activations by name.
#include "frontend/nn/Activation.h"

#include "frontend/Ops.h"

namespace kiln::nn {

std::string_view activationName(Activation activation) {
  switch (activation) {
  case Activation::Linear: return "linear";
  case Activation::Relu: return "relu";
  case Activation::Sigmoid: return "sigmoid";
  case Activation::Tanh: return "tanh";
  case Activation::Gelu: return "gelu";
  case Activation::GeluTanh: return "gelu_tanh";
  case Activation::Silu: return "silu";
  case Activation::Softmax: return "softmax";
  case Activation::LogSoftmax: return "log_softmax";
  }
  return "?";
}

Tensor applyActivation(Tensor x, Activation activation, std::source_location loc) {
  switch (activation) {
  case Activation::Linear: return x;
  case Activation::Relu: return relu(x, loc);
  case Activation::Sigmoid: return sigmoid(x, loc);
  case Activation::Tanh: return tanh(x, loc);
  case Activation::Gelu: return gelu(x, GeluApproximation::None, loc);
  case Activation::GeluTanh: return gelu(x, GeluApproximation::Tanh, loc);
  case Activation::Silu: return silu(x, loc);
  case Activation::Softmax: return softmax(x, -1, loc);
  case Activation::LogSoftmax: return logSoftmax(x, -1, loc);
  }
  return x;
}

} // namespace kiln::nn
