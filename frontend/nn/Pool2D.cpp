// nn::MaxPool2D and nn::AvgPool2D.
#include "frontend/nn/Pool2D.h"

namespace kiln::nn {

template <PoolKind Kind>
Pool2D<Kind>::Pool2D(Pool2DConfig config)
    : ConfiguredLayer(Kind == PoolKind::Max ? "max_pool2d" : "avg_pool2d", std::move(config)) {}

template <PoolKind Kind>
Pool2D<Kind>::Pool2D(int64_t pool, int64_t stride, Padding padding, Layout layout,
                     std::string name)
    : Pool2D(Pool2DConfig{.pool = {pool, pool},
                          .stride = {stride, stride},
                          .padding = padding,
                          .layout = layout,
                          .name = std::move(name)}) {}

template <PoolKind Kind>
Tensor Pool2D<Kind>::forward(Graph &, Tensor x, const std::source_location &loc) {
  return Kind == PoolKind::Max ? maxPool2d(x, config_.options(), loc)
                               : avgPool2d(x, config_.options(), loc);
}

template class Pool2D<PoolKind::Max>;
template class Pool2D<PoolKind::Avg>;

} // namespace kiln::nn
