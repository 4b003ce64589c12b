// nn::MaxPool2D.
#include "frontend/nn/MaxPool2D.h"

namespace kiln::nn {

MaxPool2D::MaxPool2D(Pool2DConfig config)
    : Layer("max_pool2d", config.name), config_(std::move(config)) {}

MaxPool2D::MaxPool2D(int64_t pool, int64_t stride, Padding padding, Layout layout, std::string name)
    : MaxPool2D(Pool2DConfig{.pool = {pool, pool},
                             .stride = {stride, stride},
                             .padding = padding,
                             .layout = layout,
                             .name = std::move(name)}) {}

Tensor MaxPool2D::forward(Graph &, Tensor x, const std::source_location &loc) {
  return maxPool2d(x, config_.options(), loc);
}

} // namespace kiln::nn
