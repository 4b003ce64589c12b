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
  case Activation::Relu6: return "relu6";
  case Activation::HardSigmoid: return "hard_sigmoid";
  case Activation::HardSwish: return "hard_swish";
  case Activation::Softplus: return "softplus";
  case Activation::Mish: return "mish";
  case Activation::LeakyRelu: return "leaky_relu";
  case Activation::Elu: return "elu";
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
  case Activation::Relu6: return relu6(x, loc);
  case Activation::HardSigmoid: return hardSigmoid(x, 1.0 / 6.0, 0.5, loc);
  case Activation::HardSwish: return hardSwish(x, loc);
  case Activation::Softplus: return softplus(x, 1.0, 20.0, loc);
  case Activation::Mish: return mish(x, loc);
  case Activation::LeakyRelu: return leakyRelu(x, 0.01, loc);
  case Activation::Elu: return elu(x, 1.0, loc);
  }
  return x;
}

} // namespace kiln::nn
