// Transfer learning on a frozen VGG16-shaped base.
#include "examples/models/VggTransfer.h"

#include "frontend/nn/Layers.h"

#include <fmt/format.h>

namespace kiln::examples {

using namespace kiln::nn;

Tensor buildVggTransfer(Graph &graph, const VggTransferConfig &config) {
  Tensor x =
      graph.input("images", {config.batch, config.channels, config.imageSize, config.imageSize});
  for (size_t block = 0; block < config.blockWidths.size(); ++block) {
    for (int64_t conv = 0; conv < config.convsPerBlock[block]; ++conv) {
      Conv2D layer(config.blockWidths[block], {3, 3}, Activation::Relu, Padding::same(), {1, 1},
                   Layout::NCHW, fmt::format("block{}_conv{}", block + 1, conv + 1));
      layer.setTrainable(false);
      x = layer(graph, x);
    }
    x = MaxPool2D(2, 2, Padding::valid(), Layout::NCHW,
                  fmt::format("block{}_pool", block + 1))(graph, x);
  }
  Sequential head(Flatten(), Dense(config.hidden, Activation::Relu, true, "fc1"),
                  Dense(config.classes, headActivation(config.head), true, "predictions"));
  Tensor result = head(graph, x);
  graph.output(headOutputName(config.head), result);
  return result;
}

} // namespace kiln::examples
