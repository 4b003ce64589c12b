// nn::MaxPool2D: 2-D max pooling.
#pragma once

#include "frontend/nn/Layer.h"
#include "frontend/nn/Pool2DConfig.h"

namespace kiln::nn {

class MaxPool2D : public Layer {
public:
  explicit MaxPool2D(Pool2DConfig config);
  /// A square `pool` x `pool` window; stride 0 means `pool`. For other
  /// shapes use the config: MaxPool2D({.pool = {3, 2}, .stride = {1, 1}}).
  explicit MaxPool2D(int64_t pool = 2, int64_t stride = 0, Padding padding = Padding::valid(),
                     Layout layout = Layout::NCHW, std::string name = {});
  const Pool2DConfig &config() const { return config_; }

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;

private:
  Pool2DConfig config_;
};

} // namespace kiln::nn
