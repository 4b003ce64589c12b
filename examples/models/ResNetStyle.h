// A small ResNet-style classifier: conv + batch norm + relu blocks with
// residual adds, global average pooling and a dense head.
#pragma once

#include "frontend/Graph.h"

#include <vector>

namespace kiln::examples {

struct ResNetStyleConfig {
  Dim batch = 8; ///< a size, or a symbol: kiln::dim("N", 1, 64) (docs/dynamic-shapes.md)
  int64_t imageSize = 32;
  int64_t channels = 3;
  /// Width of each stage; every stage after the first halves H and W.
  std::vector<int64_t> stageWidths = {16, 32, 64};
  int64_t blocksPerStage = 2;
  int64_t classes = 10;
};

/// Stem conv1 (3x3) bn1 relu; then per stage, blocksPerStage basic blocks
///   y = bn2(conv2(relu(bn1(conv1(x)))));  out = relu(y + shortcut(x))
/// where shortcut is identity, or downsample.0 (1x1 conv, stride 2) and
/// downsample.1 (batch norm) when the block changes the shape; then global
/// average pooling, Flatten and Dense(classes, softmax) "fc". Convs are
/// "same", bias-free (batch norm follows). Parameters use torchvision's names
/// (layer1.0.conv1.weight, ...). Adds input "images"
/// f32[batch, channels, size, size] and output "probabilities".
Tensor buildResNetStyle(Graph &graph, const ResNetStyleConfig &config = {});

} // namespace kiln::examples
