// Transfer learning: a frozen VGG16-shaped convolutional base and a new
// trainable classification head.
#pragma once

#include "examples/models/ClassifierHead.h"
#include "frontend/Graph.h"

#include <array>

namespace kiln::examples {

struct VggTransferConfig {
  Dim batch = 1; ///< a size, or a symbol: kiln::dim("N", 1, 64) (docs/dynamic-shapes.md)
  int64_t imageSize = 224;
  int64_t channels = 3;
  /// Conv widths of VGG16's five blocks.
  std::array<int64_t, 5> blockWidths = {64, 128, 256, 512, 512};
  /// Conv layers per block: VGG16's 13 in all.
  std::array<int64_t, 5> convsPerBlock = {2, 2, 3, 3, 3};
  int64_t hidden = 256;
  int64_t classes = 10;
  /// Softmax for inference; Logits for training (the parameters are the same).
  ClassifierHead head = ClassifierHead::Softmax;
};

/// The base: per block, convsPerBlock 3x3 "same" convs with relu, then a 2x2
/// max pool (Keras's VGG16 layer names, block1_conv1 ... block5_pool), every
/// parameter frozen (trainable = false): in transfer learning they hold
/// pretrained weights (load them with Graph::loadParamValues) and training
/// leaves them alone. The head, trainable: Flatten, Dense(256, relu) "fc1",
/// Dense(10, softmax) "predictions". Adds input "images"
/// f32[batch, channels, size, size] and output "probabilities" (or "logits"
/// with ClassifierHead::Logits).
/// imageSize must be a multiple of 32 (five 2x2 pools).
Tensor buildVggTransfer(Graph &graph, const VggTransferConfig &config = {});

} // namespace kiln::examples
