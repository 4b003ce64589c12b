// nn::Dense: a fully connected layer, y = activation(x @ weight + bias).
#pragma once

#include "frontend/nn/Activation.h"
#include "frontend/nn/Layer.h"

namespace kiln::nn {

struct DenseConfig {
  int64_t units = 0;
  Activation activation = Activation::Linear;
  bool useBias = true;
  Initializer kernelInitializer = glorotUniform;
  Initializer biasInitializer = zeros;
  std::string name = {};
};

/// Maps the last axis of x [..., in] to `units`: weight is [in, units] (the
/// Keras layout, so no transpose), bias [units].
class Dense : public ConfiguredLayer<DenseConfig> {
public:
  explicit Dense(DenseConfig config);
  explicit Dense(int64_t units, Activation activation = Activation::Linear, bool useBias = true,
                 std::string name = {});

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;
};

} // namespace kiln::nn
