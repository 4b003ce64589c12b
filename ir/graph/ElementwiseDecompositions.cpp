// The decompositions of the composite elementwise ops (Ops.def's
// "Composite elementwise ops"): each op is defined by these primitives alone,
// so they are its semantics for the interpreter, autodiff and every backend.
//
// They compute in the operand's dtype, as the DSL compositions they replaced
// did (each primitive rounds to it), and build only primitives: a decomposition
// never names another composite, so one decompose run leaves none behind.
// Constants are splats of shape [] and x's dtype that broadcast.
#include "ir/graph/Decompositions.h"

#include "ir/graph/DecompositionBuilder.h"

#include <limits>

namespace kiln::ir {

namespace {

using detail::Builder;

/// min(max(x, low), high) as the primitive clamp.
Expected<Value *> buildClamp(Builder &b, Value *x, double low, double high) {
  return b.op(OpKind::Clamp, {x}, {{"min", low}, {"max", high}});
}

/// clamp(alpha * x + beta, 0, 1).
Expected<Value *> buildHardSigmoid(Builder &b, Value *x, double alphaValue, double betaValue) {
  DType dtype = x->type().dtype;
  KILN_TRY(Value * alpha, b.scalar(alphaValue, dtype));
  KILN_TRY(Value * scaled, b.op(OpKind::Mul, {x, alpha}));
  KILN_TRY(Value * beta, b.scalar(betaValue, dtype));
  KILN_TRY(Value * shifted, b.op(OpKind::Add, {scaled, beta}));
  return buildClamp(b, shifted, 0.0, 1.0);
}

/// log(1 + exp(y)) / beta for y = beta * x, as relu(y) + log(1 + exp(-|y|)):
/// exp never sees a positive argument, so it cannot overflow. Where y exceeds
/// a finite threshold the result is x itself (PyTorch's linear region).
Expected<Value *> buildSoftplus(Builder &b, Value *x, double betaValue, double thresholdValue) {
  DType dtype = x->type().dtype;
  Value *scaled = x;
  Value *beta = nullptr;
  if (betaValue != 1.0) {
    KILN_TRY(beta, b.scalar(betaValue, dtype));
    KILN_TRY(scaled, b.op(OpKind::Mul, {x, beta}));
  }
  KILN_TRY(Value * positivePart, b.op(OpKind::Relu, {scaled}));
  KILN_TRY(Value * magnitude, b.op(OpKind::Abs, {scaled}));
  KILN_TRY(Value * negated, b.op(OpKind::Neg, {magnitude}));
  KILN_TRY(Value * exps, b.op(OpKind::Exp, {negated}));
  KILN_TRY(Value * one, b.scalar(1.0, dtype));
  KILN_TRY(Value * onePlus, b.op(OpKind::Add, {one, exps}));
  KILN_TRY(Value * logs, b.op(OpKind::Log, {onePlus}));
  KILN_TRY(Value * smooth, b.op(OpKind::Add, {positivePart, logs}));
  if (beta != nullptr) {
    KILN_TRY(smooth, b.op(OpKind::Div, {smooth, beta}));
  }
  if (thresholdValue == std::numeric_limits<double>::infinity())
    return smooth;
  KILN_TRY(Value * threshold, b.scalar(thresholdValue, dtype));
  KILN_TRY(Value * linear, b.op(OpKind::Gt, {scaled, threshold}));
  return b.op(OpKind::Where, {linear, x, smooth});
}

} // namespace

Expected<Value *> decomposeRelu6(Graph &graph, Node &node) {
  Builder b(graph, node);
  return buildClamp(b, node.operand(0), 0.0, 6.0);
}

Expected<Value *> decomposeHardSigmoid(Graph &graph, Node &node) {
  Builder b(graph, node);
  return buildHardSigmoid(b, node.operand(0), getFloat(node.attrs(), "alpha"),
                          getFloat(node.attrs(), "beta"));
}

Expected<Value *> decomposeHardSwish(Graph &graph, Node &node) {
  // x * hard_sigmoid(x) with PyTorch's slope 1/6, i.e. x * relu6(x + 3) / 6.
  Builder b(graph, node);
  Value *x = node.operand(0);
  KILN_TRY(Value * gate, buildHardSigmoid(b, x, 1.0 / 6.0, 0.5));
  return b.op(OpKind::Mul, {x, gate});
}

Expected<Value *> decomposeSoftplus(Graph &graph, Node &node) {
  Builder b(graph, node);
  return buildSoftplus(b, node.operand(0), getFloat(node.attrs(), "beta"),
                       getFloat(node.attrs(), "threshold"));
}

Expected<Value *> decomposeMish(Graph &graph, Node &node) {
  // x * tanh(softplus(x)) with PyTorch's softplus defaults (beta 1, threshold 20).
  Builder b(graph, node);
  Value *x = node.operand(0);
  KILN_TRY(Value * smooth, buildSoftplus(b, x, 1.0, 20.0));
  KILN_TRY(Value * gate, b.op(OpKind::Tanh, {smooth}));
  return b.op(OpKind::Mul, {x, gate});
}

Expected<Value *> decomposeLeakyRelu(Graph &graph, Node &node) {
  // where(x < 0, alpha * x, x): NaN is not < 0, so it passes through.
  Builder b(graph, node);
  Value *x = node.operand(0);
  DType dtype = x->type().dtype;
  KILN_TRY(Value * zero, b.scalar(0.0, dtype));
  KILN_TRY(Value * negative, b.op(OpKind::Lt, {x, zero}));
  KILN_TRY(Value * alpha, b.scalar(getFloat(node.attrs(), "alpha"), dtype));
  KILN_TRY(Value * scaled, b.op(OpKind::Mul, {x, alpha}));
  return b.op(OpKind::Where, {negative, scaled, x});
}

Expected<Value *> decomposeElu(Graph &graph, Node &node) {
  // where(x > 0, x, alpha * (exp(x) - 1)); NaN takes the second branch, which
  // is NaN too.
  Builder b(graph, node);
  Value *x = node.operand(0);
  DType dtype = x->type().dtype;
  KILN_TRY(Value * exps, b.op(OpKind::Exp, {x}));
  KILN_TRY(Value * one, b.scalar(1.0, dtype));
  KILN_TRY(Value * expm1, b.op(OpKind::Sub, {exps, one}));
  KILN_TRY(Value * alpha, b.scalar(getFloat(node.attrs(), "alpha"), dtype));
  KILN_TRY(Value * negativePart, b.op(OpKind::Mul, {expm1, alpha}));
  KILN_TRY(Value * zero, b.scalar(0.0, dtype));
  KILN_TRY(Value * positive, b.op(OpKind::Gt, {x, zero}));
  return b.op(OpKind::Where, {positive, x, negativePart});
}

} // namespace kiln::ir
