// kiln::Tensor accessors and the C++ operators, which forward to Ops.h with
// the location captured by LocatedTensor.
#include "frontend/Tensor.h"

#include "frontend/Ops.h"
#include "ir/graph/Graph.h"

namespace kiln {

const ir::TensorType &Tensor::type() const {
  static const ir::TensorType kNone{};
  return value_ ? value_->type() : kNone;
}

int64_t Tensor::dim(int64_t axis) const {
  int64_t r = rank();
  int64_t normalized = axis < 0 ? axis + r : axis;
  return normalized >= 0 && normalized < r ? shape()[static_cast<size_t>(normalized)] : 0;
}

std::string Tensor::str() const {
  if (value_)
    return value_->type().str();
  return graph_ ? "<poisoned>" : "<empty>";
}

// Each operator forwards to its op function, with the scalar (if any) made a
// splat of the tensor operand's dtype.
#define KILN_BINARY_OPERATOR(symbol, function)                                                     \
  Tensor operator symbol(LocatedTensor a, Tensor b) { return function(a.tensor, b, a.loc); }       \
  Tensor operator symbol(LocatedTensor a, double b) {                                              \
    return function(a.tensor, scalarLike(a.tensor, b, a.loc), a.loc);                              \
  }                                                                                                \
  Tensor operator symbol(double a, LocatedTensor b) {                                              \
    return function(scalarLike(b.tensor, a, b.loc), b.tensor, b.loc);                              \
  }

KILN_BINARY_OPERATOR(+, add)
KILN_BINARY_OPERATOR(-, sub)
KILN_BINARY_OPERATOR(*, mul)
KILN_BINARY_OPERATOR(/, div)
KILN_BINARY_OPERATOR(<, lt)
KILN_BINARY_OPERATOR(<=, le)
KILN_BINARY_OPERATOR(>, gt)
KILN_BINARY_OPERATOR(>=, ge)

#undef KILN_BINARY_OPERATOR

Tensor operator-(LocatedTensor x) { return neg(x.tensor, x.loc); }

} // namespace kiln
