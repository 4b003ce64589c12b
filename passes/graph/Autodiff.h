// Reverse-mode automatic differentiation of a graph IR: appends to a graph the
// nodes that compute the gradient of a loss with respect to chosen values,
// using the op table's gradient rules (ir/graph/Gradients.h).
#pragma once

#include "ir/graph/Graph.h"

#include <span>
#include <vector>

namespace kiln::passes {

/// Adds to `graph` the gradient of `loss` with respect to each of `wrt`
/// (graph inputs, parameters or node results, each a float value) and returns
/// them in the same order, each of its value's type.
///
/// `loss` must be a float value. With no `seed` it must have one element and
/// the seed is 1; otherwise `seed` (a value of loss's type) is the incoming
/// gradient of the loss. Only nodes on a path from some wrt to the loss are
/// differentiated; gradients reaching a value through several uses are summed;
/// a wrt the loss does not depend on gets a zeros value of its type. An error
/// names the node (its op and location) whose gradient is needed but which has
/// no rule. The appended nodes carry the location of the node they
/// differentiate; nodes a rule built that turned out unused are erased.
Expected<std::vector<ir::Value *>> appendGradients(ir::Graph &graph, ir::Value *loss,
                                                   std::span<ir::Value *const> wrt,
                                                   ir::Value *seed = nullptr);

/// The output name under which the "autodiff" pass adds the gradient of the
/// parameter `paramName`: "grad.<paramName>".
std::string gradientOutputName(std::string_view paramName);

} // namespace kiln::passes
