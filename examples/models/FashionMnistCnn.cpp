// The seed CNN for Fashion-MNIST.
#include "examples/models/FashionMnistCnn.h"

#include "frontend/nn/Layers.h"

namespace kiln::examples {

using namespace kiln::nn;

Tensor buildFashionMnistCnn(Graph &graph, const FashionMnistCnnConfig &config) {
  Tensor images =
      graph.input("images", {config.batch, config.channels, config.imageSize, config.imageSize});
  Sequential model(Conv2D(config.convFilters[0], {3, 3}, Activation::Relu), MaxPool2D(),
                   Conv2D(config.convFilters[1], {3, 3}, Activation::Relu), MaxPool2D(),
                   Conv2D(config.convFilters[2], {3, 3}, Activation::Relu), Flatten(),
                   Dense(config.hidden, Activation::Relu),
                   Dense(config.classes, headActivation(config.head)));
  Tensor result = model(graph, images);
  graph.output(headOutputName(config.head), result);
  return result;
}

} // namespace kiln::examples
