// A small NCHW CNN for compile tests that need chained convolutions (the layout passes, derived
// values): three VGG-style 3x3 convolutions (3 -> 8 -> 16 -> 16 channels) with bias and relu, a
// max pool, a flatten and a dense classifier, on [2, 3, 9, 9] (odd) images named "images".
#pragma once

#include "frontend/Graph.h"
#include "frontend/Ops.h"
#include "frontend/nn/Conv2D.h"
#include "frontend/nn/Dense.h"

namespace kiln::test {

inline void buildSmallCnn(Graph &graph) {
  Tensor x = graph.input("images", {2, 3, 9, 9});
  auto conv = [](int64_t filters, const char *name) {
    return nn::Conv2D(filters, {3, 3}, nn::Activation::Relu, Padding::same(), {1, 1}, Layout::NCHW,
                      name);
  };
  nn::Conv2D first = conv(8, "c1"), second = conv(16, "c2"), third = conv(16, "c3");
  Tensor y = third(graph, second(graph, first(graph, x)));
  y = maxPool2d(y);
  y = reshape(y, {2, 16 * 4 * 4});
  nn::Dense head(5, nn::Activation::Linear, true, "head");
  graph.output("logits", head(graph, y));
}

} // namespace kiln::test
