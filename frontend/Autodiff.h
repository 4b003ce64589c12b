// The DSL face of reverse-mode autodiff (passes/graph/Autodiff.h): gradients
// of a loss Tensor, and of every trainable parameter of a Graph by name.
#pragma once

#include "frontend/Graph.h"
#include "frontend/Tensor.h"

#include <source_location>
#include <span>
#include <string>
#include <vector>

namespace kiln {

/// The gradient of `loss` (a one-element float Tensor) with respect to each
/// of `wrt`, in order, each of its Tensor's type. On an error (a poisoned or
/// foreign operand, a non-scalar or non-float loss, an op with no gradient
/// rule on the way) the Graph records it and every returned Tensor is poisoned.
std::vector<Tensor> gradients(Tensor loss, std::span<const Tensor> wrt,
                              std::source_location loc = std::source_location::current());

/// One trainable parameter's gradient.
struct ParamGradient {
  std::string name; ///< The parameter's full name ("dense.weight").
  Tensor gradient;
};

/// The gradients of `loss` with respect to every trainable parameter of
/// `graph`, in the parameters' creation order (frozen parameters take none).
std::vector<ParamGradient>
trainableParamGradients(Graph &graph, Tensor loss,
                        std::source_location loc = std::source_location::current());

} // namespace kiln
