// A small ResNet-style classifier.
#include "examples/models/ResNetStyle.h"

#include "frontend/Ops.h"
#include "frontend/nn/Layers.h"

#include <fmt/format.h>

namespace kiln::examples {

using namespace kiln::nn;

namespace {

Tensor convBn(Graph &graph, Tensor x, int64_t filters, std::array<int64_t, 2> kernel,
              int64_t stride, const std::string &convName, const std::string &bnName) {
  Conv2D conv({.filters = filters,
               .kernel = kernel,
               .stride = {stride, stride},
               .padding = Padding::same(),
               .useBias = false,
               .name = convName});
  return BatchNorm({.name = bnName})(graph, conv(graph, x));
}

Tensor basicBlock(Graph &graph, Tensor x, int64_t width, int64_t stride) {
  Tensor y = relu(convBn(graph, x, width, {3, 3}, stride, "conv1", "bn1"));
  y = convBn(graph, y, width, {3, 3}, 1, "conv2", "bn2");
  Tensor shortcut = x;
  if (stride != 1 || x.dim(1) != width) {
    auto scope = graph.nameScope("downsample");
    shortcut = convBn(graph, x, width, {1, 1}, stride, "0", "1");
  }
  return relu(y + shortcut);
}

} // namespace

Tensor buildResNetStyle(Graph &graph, const ResNetStyleConfig &config) {
  Tensor x =
      graph.input("images", {config.batch, config.channels, config.imageSize, config.imageSize});
  int64_t stemWidth = config.stageWidths.empty() ? 16 : config.stageWidths.front();
  x = relu(convBn(graph, x, stemWidth, {3, 3}, 1, "conv1", "bn1"));
  for (size_t stage = 0; stage < config.stageWidths.size(); ++stage) {
    auto stageScope = graph.nameScope(fmt::format("layer{}", stage + 1));
    for (int64_t block = 0; block < config.blocksPerStage; ++block) {
      auto blockScope = graph.nameScope(std::to_string(block));
      int64_t stride = stage > 0 && block == 0 ? 2 : 1;
      x = basicBlock(graph, x, config.stageWidths[stage], stride);
    }
  }
  x = flatten(globalAvgPool(x));
  Tensor probabilities = Dense(config.classes, Activation::Softmax, true, "fc")(graph, x);
  graph.output("probabilities", probabilities);
  return probabilities;
}

} // namespace kiln::examples
