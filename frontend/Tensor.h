// kiln::Tensor: the DSL's handle to one graph value, and the C++ operators
// (+ - * / unary -, < <= > >=) that build ops on it.
#pragma once

#include "ir/graph/TensorType.h"

#include <source_location>
#include <string>

namespace kiln {

namespace ir {
class Value;
}
class Graph;

using Shape = ir::Shape;

/// A lightweight handle to a value of a kiln::Graph: a graph pointer and an IR
/// value. Cheap to copy; valid while its Graph lives.
///
/// A Tensor is in one of three states:
///  - ok: it names a value (`ok()` is true);
///  - poisoned: a DSL call that produced it failed. The Graph recorded the
///    error (with the user's file:line) and every op applied to a poisoned
///    Tensor is a no-op returning another poisoned Tensor, so one mistake gives
///    one error, reported by Graph::finalize();
///  - empty: default-constructed, belonging to no graph.
class Tensor {
public:
  Tensor() = default;
  Tensor(Graph *graph, ir::Value *value) : graph_(graph), value_(value) {}

  /// True when the handle names a value (neither empty nor poisoned).
  bool ok() const { return value_ != nullptr; }
  /// True after a failed DSL call: the graph holds the error.
  bool poisoned() const { return graph_ != nullptr && value_ == nullptr; }
  /// True for a default-constructed handle.
  bool empty() const { return graph_ == nullptr; }

  Graph *graph() const { return graph_; }
  ir::Value *value() const { return value_; }

  /// The static type; f32[] for an empty or poisoned handle.
  const ir::TensorType &type() const;
  const Shape &shape() const { return type().shape; }
  DType dtype() const { return type().dtype; }
  int64_t rank() const { return type().rank(); }
  /// Size of `axis`, negative counting from the end; 0 when out of range.
  int64_t dim(int64_t axis) const;
  int64_t numElements() const { return type().numElements(); }
  /// "f32[8,10]", or "<poisoned>" / "<empty>".
  std::string str() const;

private:
  Graph *graph_ = nullptr;
  ir::Value *value_ = nullptr;
};

/// A Tensor operand paired with the source location of the expression that
/// produced the conversion. C++ operators cannot take a defaulted
/// std::source_location parameter, but a converting constructor can: the
/// default argument is evaluated where the user wrote `a + b`, so errors from
/// operators still name the user's line.
struct LocatedTensor {
  LocatedTensor(Tensor tensor, std::source_location loc = std::source_location::current())
      : tensor(tensor), loc(loc) {}
  Tensor tensor;
  std::source_location loc;
};

// Arithmetic. A double operand becomes a rank-0 splat `constant` of the other
// operand's dtype (an error when it is not exactly representable in an integer
// or bool dtype), broadcast by the op.
Tensor operator+(LocatedTensor a, Tensor b);
Tensor operator+(LocatedTensor a, double b);
Tensor operator+(double a, LocatedTensor b);
Tensor operator-(LocatedTensor a, Tensor b);
Tensor operator-(LocatedTensor a, double b);
Tensor operator-(double a, LocatedTensor b);
Tensor operator*(LocatedTensor a, Tensor b);
Tensor operator*(LocatedTensor a, double b);
Tensor operator*(double a, LocatedTensor b);
Tensor operator/(LocatedTensor a, Tensor b);
Tensor operator/(LocatedTensor a, double b);
Tensor operator/(double a, LocatedTensor b);
Tensor operator-(LocatedTensor x);

// Comparisons give bool tensors. == and != are deliberately not overloaded (a
// Tensor stays an ordinary value type); use eq() and ne() from Ops.h.
Tensor operator<(LocatedTensor a, Tensor b);
Tensor operator<(LocatedTensor a, double b);
Tensor operator<(double a, LocatedTensor b);
Tensor operator<=(LocatedTensor a, Tensor b);
Tensor operator<=(LocatedTensor a, double b);
Tensor operator<=(double a, LocatedTensor b);
Tensor operator>(LocatedTensor a, Tensor b);
Tensor operator>(LocatedTensor a, double b);
Tensor operator>(double a, LocatedTensor b);
Tensor operator>=(LocatedTensor a, Tensor b);
Tensor operator>=(LocatedTensor a, double b);
Tensor operator>=(double a, LocatedTensor b);

} // namespace kiln
