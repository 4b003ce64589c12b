// A multilayer perceptron classifier.
#include "examples/models/Mlp.h"

#include "frontend/nn/Dense.h"

namespace kiln::examples {

Tensor buildMlp(Graph &graph, const MlpConfig &config) {
  Tensor x = graph.input("x", {config.batch, config.inputs});
  for (int64_t width : config.hidden)
    x = nn::Dense(width, config.activation)(graph, x);
  Tensor probabilities = nn::Dense(config.classes, nn::Activation::Softmax)(graph, x);
  graph.output("probabilities", probabilities);
  return probabilities;
}

} // namespace kiln::examples
