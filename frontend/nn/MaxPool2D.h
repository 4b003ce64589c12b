// nn::MaxPool2D: 2-D max pooling.
#pragma once

#include "frontend/nn/Layer.h"
#include "frontend/nn/Pool2DConfig.h"

namespace kiln::nn {

class MaxPool2D : public Layer {
public:
  explicit MaxPool2D(Pool2DConfig config);
  explicit MaxPool2D(std::array<int64_t, 2> pool = {2, 2}, std::array<int64_t, 2> stride = {0, 0},
                     Padding padding = Padding::valid(), Layout layout = Layout::NCHW,
                     std::string name = {});
  const Pool2DConfig &config() const { return config_; }

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;

private:
  Pool2DConfig config_;
};

} // namespace kiln::nn
