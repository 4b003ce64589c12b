// GradientBuilder: the small vocabulary the gradient rules share (scalars of a
// dtype, zeros, sums back to a broadcast operand's shape, interior zeros for
// strided slices), adding nodes at the differentiated node's location so an
// error in a backward node still points at the user's line.
#pragma once

#include "ir/graph/Graph.h"

#include <span>

namespace kiln::ir {

class GradientBuilder {
public:
  GradientBuilder(Graph &graph, const Node &node) : graph_(graph), location_(node.location()) {}

  Graph &graph() { return graph_; }

  Expected<Value *> op(OpKind kind, std::vector<Value *> operands, AttrMap attrs = {});

  // Shorthands for the ops the rules use most.
  Expected<Value *> add(Value *a, Value *b) { return op(OpKind::Add, {a, b}); }
  Expected<Value *> sub(Value *a, Value *b) { return op(OpKind::Sub, {a, b}); }
  Expected<Value *> mul(Value *a, Value *b) { return op(OpKind::Mul, {a, b}); }
  Expected<Value *> div(Value *a, Value *b) { return op(OpKind::Div, {a, b}); }
  Expected<Value *> neg(Value *a) { return op(OpKind::Neg, {a}); }
  Expected<Value *> where(Value *cond, Value *a, Value *b) {
    return op(OpKind::Where, {cond, a, b});
  }
  /// `x * value` with `value` a scalar constant of x's dtype.
  Expected<Value *> mulScalar(Value *x, double value);

  /// A rank-0 splat constant; broadcasts against anything.
  Expected<Value *> scalar(double value, DType dtype);
  /// The product of `x`'s sizes over `axes` as a scalar of `dtype`: a constant when they are
  /// static, else a symbol_size, which the run gives its value.
  Expected<Value *> sizeOf(Value *x, std::span<const int64_t> axes, DType dtype);
  /// A splat of zeros of `type`.
  Expected<Value *> zeros(const TensorType &type);

  /// reduce_sum over `axes`, keeping them as size 1.
  Expected<Value *> sumKeep(Value *x, std::vector<int64_t> axes);
  /// reduce_mean over `axes`, keeping them as size 1.
  Expected<Value *> meanKeep(Value *x, std::vector<int64_t> axes);

  /// `x` converted to `dtype`; `x` itself when it already has that dtype.
  Expected<Value *> castTo(Value *x, DType dtype);
  /// `x` reshaped to `shape`; `x` itself when it already has it.
  Expected<Value *> reshape(Value *x, Shape shape);
  /// `x` broadcast to `shape`; `x` itself when it already has it.
  Expected<Value *> broadcastTo(Value *x, Shape shape);
  /// The same to sizes that may be symbolic (a symbolic target passes them as `sizes`).
  Expected<Value *> reshape(Value *x, const std::vector<SizeExpr> &sizes);
  Expected<Value *> broadcastTo(Value *x, const std::vector<SizeExpr> &sizes);

  /// The adjoint of NumPy broadcasting: sums `gradient` (of a broadcast
  /// result's shape) over the axes `shape` was broadcast along, giving `shape`.
  Expected<Value *> sumToShape(Value *gradient, const Shape &shape);
  /// The same to sizes that may be symbolic (a symbolic batch's operand).
  Expected<Value *> sumToShape(Value *gradient, const std::vector<SizeExpr> &sizes);

  /// Inserts `step - 1` zeros between neighbouring elements along `axis`
  /// (a length n axis becomes (n - 1) * step + 1): the adjoint of taking every
  /// step-th element. n must be >= 1.
  Expected<Value *> dilate(Value *x, int64_t axis, int64_t step);

  /// A float 0/1 tensor of `dtype` from a bool one.
  Expected<Value *> maskOf(Value *condition, DType dtype) { return castTo(condition, dtype); }

private:
  Graph &graph_;
  Location location_;
};

/// The node's result as an operand for new nodes (rules read the node, the
/// graph they build into is mutable).
inline Value *resultOf(const Node &node) { return const_cast<Node &>(node).result(); }

/// Where normalizations and attention compute: f64 for f64, f32 for every
/// narrower float (the forward decompositions' rule; see Decompositions.cpp).
inline DType normalizationComputeDType(DType dtype) {
  return dtype == DType::F64 ? DType::F64 : DType::F32;
}

/// A node's `axis` attribute mapped into [0, rank); the node was verified.
int64_t normalizedAxisAttr(const Node &node, std::string_view name, int64_t rank);

/// A node's `axes` attribute mapped into [0, rank), sorted.
std::vector<int64_t> normalizedAxesAttr(const Node &node, int64_t rank);

} // namespace kiln::ir
