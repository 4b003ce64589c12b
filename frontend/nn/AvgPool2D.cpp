// nn::AvgPool2D.
#include "frontend/nn/AvgPool2D.h"

namespace kiln::nn {

AvgPool2D::AvgPool2D(Pool2DConfig config)
    : Layer("avg_pool2d", config.name), config_(std::move(config)) {}

AvgPool2D::AvgPool2D(int64_t pool, int64_t stride, Padding padding, Layout layout, std::string name)
    : AvgPool2D(Pool2DConfig{.pool = {pool, pool},
                             .stride = {stride, stride},
                             .padding = padding,
                             .layout = layout,
                             .name = std::move(name)}) {}

Tensor AvgPool2D::forward(Graph &, Tensor x, const std::source_location &loc) {
  return avgPool2d(x, config_.options(), loc);
}

} // namespace kiln::nn
