// A multilayer perceptron classifier.
#include "examples/models/Mlp.h"

#include "frontend/nn/Dense.h"

namespace kiln::examples {

Tensor buildMlp(Graph &graph, const MlpConfig &config) {
  Tensor x = graph.input("x", {config.batch, config.inputs});
  for (int64_t width : config.hidden)
    x = nn::Dense(width, config.activation)(graph, x);
  Tensor result = nn::Dense(config.classes, headActivation(config.head))(graph, x);
  graph.output(headOutputName(config.head), result);
  return result;
}

} // namespace kiln::examples
