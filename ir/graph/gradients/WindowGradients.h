// Gradient rules (vector-Jacobian products) of the window ops: conv2d,
// max_pool2d and avg_pool2d. Each builds its operand gradients from existing
// graph ops only, so every backend runs them with no lowering of its own.
#pragma once

#include "ir/graph/Graph.h"

#include <vector>

namespace kiln::ir {

/// conv2d: the gradients of the input and of the filter, each of its operand's
/// type. The input gradient is a conv2d of the result gradient (dilated by the
/// stride) with the flipped, channel-swapped filter; the filter gradient is a
/// conv2d of the batch-transposed input with the batch-transposed result
/// gradient. Every attribute is honoured (both layouts, stride, asymmetric
/// padding, dilation, groups); integer convolutions have no gradient (an error).
Expected<std::vector<Value *>> gradientConv2D(Graph &graph, const Node &node,
                                              Value *resultGradient);

/// max_pool2d: each window's result gradient goes to the first maximal element
/// of the window in row-major window order (padding never wins), summed where
/// windows overlap.
Expected<std::vector<Value *>> gradientMaxPool2D(Graph &graph, const Node &node,
                                                 Value *resultGradient);

/// avg_pool2d: each window's result gradient, divided by the window's count
/// (the whole window with count_include_pad, else its elements inside the
/// input), goes to every input element of the window, summed where windows
/// overlap.
Expected<std::vector<Value *>> gradientAvgPool2D(Graph &graph, const Node &node,
                                                 Value *resultGradient);

} // namespace kiln::ir
