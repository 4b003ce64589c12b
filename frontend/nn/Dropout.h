// nn::Dropout: identity at inference.
#pragma once

#include "frontend/nn/Layer.h"

namespace kiln::nn {

/// Zeroes a `rate` fraction of activations during training; at inference
/// (everything kiln builds today) it adds no node. The rate is kept for the
/// training graph.
class Dropout : public Layer {
public:
  explicit Dropout(double rate, std::string name = {});
  double rate() const { return rate_; }

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;

private:
  double rate_;
};

} // namespace kiln::nn
