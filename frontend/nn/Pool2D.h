// nn::MaxPool2D and nn::AvgPool2D: 2-D pooling layers, one class template over the op.
#pragma once

#include "frontend/Ops.h"
#include "frontend/nn/Layer.h"

#include <array>
#include <string>

namespace kiln::nn {

struct Pool2DConfig {
  std::array<int64_t, 2> pool = {2, 2};
  /// {0, 0}: equal to `pool`, as in Keras.
  std::array<int64_t, 2> stride = {0, 0};
  Padding padding = Padding::valid();
  Layout layout = Layout::NCHW;
  /// AvgPool2D only: divide by the whole window, padding included (as PyTorch).
  bool countIncludePad = true;
  /// Output size rounded up, as PyTorch's ceil_mode (Pool2DOptions::ceilMode).
  bool ceilMode = false;
  std::string name = {};

  Pool2DOptions options() const {
    return {.kernel = pool,
            .stride = stride,
            .padding = padding,
            .layout = layout,
            .countIncludePad = countIncludePad,
            .ceilMode = ceilMode};
  }
};

enum class PoolKind { Max, Avg };

template <PoolKind Kind> class Pool2D : public ConfiguredLayer<Pool2DConfig> {
public:
  explicit Pool2D(Pool2DConfig config);
  /// A square `pool` x `pool` window; stride 0 means `pool`. For other
  /// shapes use the config: MaxPool2D({.pool = {3, 2}, .stride = {1, 1}}).
  explicit Pool2D(int64_t pool = 2, int64_t stride = 0, Padding padding = Padding::valid(),
                  Layout layout = Layout::NCHW, std::string name = {});

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;
};

using MaxPool2D = Pool2D<PoolKind::Max>;
using AvgPool2D = Pool2D<PoolKind::Avg>;
extern template class Pool2D<PoolKind::Max>;
extern template class Pool2D<PoolKind::Avg>;

} // namespace kiln::nn
