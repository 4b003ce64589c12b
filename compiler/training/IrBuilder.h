// IrBuilder: terse construction of graph IR nodes for the training program
// (optimizer updates, clipping, loss scaling), every node at one location.
#pragma once

#include "ir/graph/Graph.h"

#include <vector>

namespace kiln::training {

/// Adds nodes to a graph at a fixed location (the training program's nodes
/// have no user line of their own). Every helper fails only when the graph
/// rejects a node, which for the operands the training code passes is a bug
/// reported as an Error rather than a crash.
class IrBuilder {
public:
  IrBuilder(ir::Graph &graph, Location location = {}) : graph_(graph), location_(location) {}

  ir::Graph &graph() { return graph_; }

  Expected<ir::Value *> op(ir::OpKind kind, std::vector<ir::Value *> operands,
                           ir::AttrMap attrs = {}) {
    return graph_.addNode(kind, std::move(operands), std::move(attrs), location_);
  }

  /// A rank-0 splat of `value`.
  Expected<ir::Value *> scalar(double value, DType dtype) {
    return op(ir::OpKind::Constant, {},
              {{"dtype", dtype}, {"shape", ir::Shape{}}, {"value", std::vector<double>{value}}});
  }

  Expected<ir::Value *> add(ir::Value *a, ir::Value *b) { return op(ir::OpKind::Add, {a, b}); }
  Expected<ir::Value *> sub(ir::Value *a, ir::Value *b) { return op(ir::OpKind::Sub, {a, b}); }
  Expected<ir::Value *> mul(ir::Value *a, ir::Value *b) { return op(ir::OpKind::Mul, {a, b}); }
  Expected<ir::Value *> div(ir::Value *a, ir::Value *b) { return op(ir::OpKind::Div, {a, b}); }

  /// a * constant, or `a` itself when the constant is 1.
  Expected<ir::Value *> scale(ir::Value *a, double factor) {
    if (factor == 1.0)
      return a;
    KILN_TRY(ir::Value * constant, scalar(factor, a->type().dtype));
    return mul(a, constant);
  }

  /// `x` converted to `dtype`; `x` itself when it already has that dtype.
  Expected<ir::Value *> castTo(ir::Value *x, DType dtype) {
    if (x->type().dtype == dtype)
      return x;
    return op(ir::OpKind::Cast, {x}, {{"dtype", dtype}});
  }

  /// The sum of every element, a scalar.
  Expected<ir::Value *> sumAll(ir::Value *x) {
    std::vector<int64_t> axes;
    for (int64_t axis = 0; axis < x->type().rank(); ++axis)
      axes.push_back(axis);
    if (axes.empty())
      return x;
    return op(ir::OpKind::ReduceSum, {x}, {{"axes", std::move(axes)}, {"keepdims", false}});
  }

private:
  ir::Graph &graph_;
  Location location_;
};

} // namespace kiln::training
