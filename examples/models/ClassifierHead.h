// How an example model ends: in the probabilities inference wants, or in the
// logits a training loss takes (softmaxCrossEntropy is stable on logits only).
#pragma once

#include "frontend/Graph.h"
#include "frontend/nn/Activation.h"

#include <string>

namespace kiln::examples {

enum class ClassifierHead {
  Softmax, ///< the last Dense applies softmax; output "probabilities"
  Logits,  ///< the last Dense is linear; output "logits"
};

/// The last Dense layer's activation for `head`.
inline nn::Activation headActivation(ClassifierHead head) {
  return head == ClassifierHead::Softmax ? nn::Activation::Softmax : nn::Activation::Linear;
}

/// The output name for `head`: "probabilities" or "logits".
inline std::string headOutputName(ClassifierHead head) {
  return head == ClassifierHead::Softmax ? "probabilities" : "logits";
}

} // namespace kiln::examples
