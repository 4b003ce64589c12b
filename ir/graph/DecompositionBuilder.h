// The node builder the decompositions share (Decompositions.cpp,
// ElementwiseDecompositions.cpp): internal to ir/graph.
#pragma once

#include "ir/graph/Graph.h"

namespace kiln::ir::detail {

/// Adds nodes at the decomposed node's location, so an error in a primitive
/// still points at the user's line.
class Builder {
public:
  Builder(Graph &graph, const Node &node) : graph_(graph), location_(node.location()) {}

  Expected<Value *> op(OpKind kind, std::vector<Value *> operands, AttrMap attrs = {}) {
    return graph_.addNode(kind, std::move(operands), std::move(attrs), location_);
  }

  Expected<Value *> scalar(double value, DType dtype) {
    return op(OpKind::Constant, {},
              {{"dtype", dtype}, {"shape", Shape{}}, {"value", std::vector<double>{value}}});
  }

  Expected<Value *> reduce(OpKind kind, Value *x, std::vector<int64_t> axes) {
    return op(kind, {x}, {{"axes", std::move(axes)}, {"keepdims", true}});
  }

  /// `x` converted to `dtype`; `x` itself when it already has that dtype.
  Expected<Value *> castTo(Value *x, DType dtype) {
    if (x->type().dtype == dtype)
      return x;
    return op(OpKind::Cast, {x}, {{"dtype", dtype}});
  }

private:
  Graph &graph_;
  Location location_;
};

} // namespace kiln::ir::detail
