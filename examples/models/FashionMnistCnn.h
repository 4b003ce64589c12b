// The seed CNN for 28x28 grayscale images (Fashion-MNIST), sizes configurable.
#pragma once

#include "examples/models/ClassifierHead.h"
#include "frontend/Graph.h"

#include <array>

namespace kiln::examples {

struct FashionMnistCnnConfig {
  Dim batch = 8; ///< a size, or a symbol: kiln::dim("N", 1, 64) (docs/dynamic-shapes.md)
  int64_t imageSize = 28;
  int64_t channels = 1;
  std::array<int64_t, 3> convFilters = {32, 64, 64};
  int64_t hidden = 64;
  int64_t classes = 10;
  /// Softmax for inference; Logits for training (the parameters are the same).
  ClassifierHead head = ClassifierHead::Softmax;
};

/// Conv2D(32, 3x3, relu) MaxPool(2) Conv2D(64, 3x3, relu) MaxPool(2)
/// Conv2D(64, 3x3, relu) Flatten Dense(64, relu) Dense(10, softmax), all
/// "valid" padding, nchw. Adds input "images" f32[batch, channels, size, size]
/// and output "probabilities" f32[batch, classes] (or "logits" with
/// ClassifierHead::Logits); returns it.
Tensor buildFashionMnistCnn(Graph &graph, const FashionMnistCnnConfig &config = {});

} // namespace kiln::examples
