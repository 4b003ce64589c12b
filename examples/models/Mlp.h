// A multilayer perceptron classifier.
#pragma once

#include "examples/models/ClassifierHead.h"
#include "frontend/Graph.h"
#include "frontend/nn/Activation.h"

#include <vector>

namespace kiln::examples {

struct MlpConfig {
  Dim batch = 8; ///< a size, or a symbol: kiln::dim("N", 1, 64) (docs/dynamic-shapes.md)
  int64_t inputs = 784;
  std::vector<int64_t> hidden = {256, 128};
  int64_t classes = 10;
  nn::Activation activation = nn::Activation::Relu;
  /// Softmax for inference; Logits for training (the parameters are the same).
  ClassifierHead head = ClassifierHead::Softmax;
};

/// Dense(hidden[i], activation)... Dense(classes, softmax). Adds input "x"
/// f32[batch, inputs] and output "probabilities" f32[batch, classes].
Tensor buildMlp(Graph &graph, const MlpConfig &config = {});

} // namespace kiln::examples
