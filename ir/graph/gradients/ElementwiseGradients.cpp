// Gradient rules of the elementwise ops. Each computes in the result's dtype;
// binary ops sum their gradients back over broadcast axes (sumToShape).
#include "ir/graph/Gradients.h"
#include "ir/graph/gradients/GradientBuilder.h"

#include <cmath>
#include <numbers>

namespace kiln::ir {

namespace {

using Gradients = std::vector<Value *>;

/// The gradient of a unary op whose derivative `derivative(b, x, y)` is
/// computed from the operand x and the result y: g * derivative.
template <typename DerivativeFn>
Expected<Gradients> unary(Graph &graph, const Node &node, Value *g, DerivativeFn derivative) {
  GradientBuilder b(graph, node);
  Value *x = node.operand(0);
  Value *y = resultOf(node);
  KILN_TRY(Value * d, derivative(b, x, y));
  KILN_TRY(Value * gradient, b.mul(g, d));
  return Gradients{gradient};
}

/// A bool "x > 0" style comparison of x with a scalar of its dtype.
Expected<Value *> compareScalar(GradientBuilder &b, OpKind kind, Value *x, double value) {
  KILN_TRY(Value * constant, b.scalar(value, x->type().dtype));
  return b.op(kind, {x, constant});
}

/// `g` where `condition` holds, else 0.
Expected<Value *> keepWhere(GradientBuilder &b, Value *condition, Value *g) {
  KILN_TRY(Value * zero, b.scalar(0.0, g->type().dtype));
  return b.where(condition, g, zero);
}

/// Elementwise max/min: the gradient goes to the larger (smaller) operand and
/// ties split it evenly, so the pair's gradients always sum to g.
Expected<Gradients> extremum(Graph &graph, const Node &node, Value *g, OpKind wins) {
  GradientBuilder b(graph, node);
  Value *a = node.operand(0), *c = node.operand(1);
  OpKind loses = wins == OpKind::Gt ? OpKind::Lt : OpKind::Gt;
  KILN_TRY(Value * half, b.mulScalar(g, 0.5));
  KILN_TRY(Value * tie, b.op(OpKind::Eq, {a, c}));
  KILN_TRY(Value * onTie, keepWhere(b, tie, half));
  KILN_TRY(Value * aWins, b.op(wins, {a, c}));
  KILN_TRY(Value * cWins, b.op(loses, {a, c}));
  KILN_TRY(Value * ga, b.where(aWins, g, onTie));
  KILN_TRY(Value * gc, b.where(cWins, g, onTie));
  KILN_TRY(Value * da, b.sumToShape(ga, a->type().sizes()));
  KILN_TRY(Value * dc, b.sumToShape(gc, c->type().sizes()));
  return Gradients{da, dc};
}

} // namespace

Expected<Gradients> gradientNeg(Graph &graph, const Node &node, Value *g) {
  GradientBuilder b(graph, node);
  KILN_TRY(Value * gradient, b.neg(g));
  return Gradients{gradient};
}

Expected<Gradients> gradientAbs(Graph &graph, const Node &node, Value *g) {
  // sign(x) * g, with 0 at x == 0 (a subgradient).
  GradientBuilder b(graph, node);
  Value *x = node.operand(0);
  KILN_TRY(Value * positive, compareScalar(b, OpKind::Gt, x, 0.0));
  KILN_TRY(Value * negative, compareScalar(b, OpKind::Lt, x, 0.0));
  KILN_TRY(Value * negated, b.neg(g));
  KILN_TRY(Value * onNegative, keepWhere(b, negative, negated));
  KILN_TRY(Value * gradient, b.where(positive, g, onNegative));
  return Gradients{gradient};
}

Expected<Gradients> gradientExp(Graph &graph, const Node &node, Value *g) {
  return unary(graph, node, g,
               [](GradientBuilder &, Value *, Value *y) -> Expected<Value *> { return y; });
}

Expected<Gradients> gradientLog(Graph &graph, const Node &node, Value *g) {
  GradientBuilder b(graph, node);
  KILN_TRY(Value * gradient, b.div(g, node.operand(0)));
  return Gradients{gradient};
}

Expected<Gradients> gradientSqrt(Graph &graph, const Node &node, Value *g) {
  // d sqrt(x) = 0.5 / sqrt(x).
  GradientBuilder b(graph, node);
  KILN_TRY(Value * half, b.mulScalar(g, 0.5));
  KILN_TRY(Value * gradient, b.div(half, resultOf(node)));
  return Gradients{gradient};
}

Expected<Gradients> gradientRsqrt(Graph &graph, const Node &node, Value *g) {
  // d x^-1/2 = -0.5 x^-3/2 = -0.5 y^3.
  return unary(graph, node, g, [](GradientBuilder &b, Value *, Value *y) -> Expected<Value *> {
    KILN_TRY(Value * square, b.mul(y, y));
    KILN_TRY(Value * cube, b.mul(square, y));
    return b.mulScalar(cube, -0.5);
  });
}

Expected<Gradients> gradientTanh(Graph &graph, const Node &node, Value *g) {
  return unary(graph, node, g, [](GradientBuilder &b, Value *, Value *y) -> Expected<Value *> {
    KILN_TRY(Value * one, b.scalar(1.0, y->type().dtype));
    KILN_TRY(Value * square, b.mul(y, y));
    return b.sub(one, square);
  });
}

Expected<Gradients> gradientSigmoid(Graph &graph, const Node &node, Value *g) {
  return unary(graph, node, g, [](GradientBuilder &b, Value *, Value *y) -> Expected<Value *> {
    KILN_TRY(Value * one, b.scalar(1.0, y->type().dtype));
    KILN_TRY(Value * complement, b.sub(one, y));
    return b.mul(y, complement);
  });
}

Expected<Gradients> gradientRelu(Graph &graph, const Node &node, Value *g) {
  // 0 at x == 0.
  GradientBuilder b(graph, node);
  KILN_TRY(Value * positive, compareScalar(b, OpKind::Gt, node.operand(0), 0.0));
  KILN_TRY(Value * gradient, keepWhere(b, positive, g));
  return Gradients{gradient};
}

Expected<Gradients> gradientGelu(Graph &graph, const Node &node, Value *g) {
  bool tanhForm = getString(node.attrs(), "approximate") == "tanh";
  return unary(
      graph, node, g, [tanhForm](GradientBuilder &b, Value *x, Value *) -> Expected<Value *> {
        DType dtype = x->type().dtype;
        KILN_TRY(Value * one, b.scalar(1.0, dtype));
        KILN_TRY(Value * square, b.mul(x, x));
        if (tanhForm) {
          // y = 0.5 x (1 + t), t = tanh(k (x + c x^3)):
          // y' = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2).
          const double k = std::sqrt(2.0 / std::numbers::pi), c = 0.044715;
          KILN_TRY(Value * cubic, b.mulScalar(square, c));
          KILN_TRY(Value * inner, b.add(one, cubic));
          KILN_TRY(Value * u, b.mul(x, inner));
          KILN_TRY(Value * scaledU, b.mulScalar(u, k));
          KILN_TRY(Value * t, b.op(OpKind::Tanh, {scaledU}));
          KILN_TRY(Value * onePlusT, b.add(one, t));
          KILN_TRY(Value * left, b.mulScalar(onePlusT, 0.5));
          KILN_TRY(Value * tSquare, b.mul(t, t));
          KILN_TRY(Value * sech2, b.sub(one, tSquare));
          KILN_TRY(Value * cubic3, b.mulScalar(square, 3.0 * c));
          KILN_TRY(Value * du, b.add(one, cubic3));
          KILN_TRY(Value * chain, b.mul(sech2, du));
          KILN_TRY(Value * xChain, b.mul(x, chain));
          KILN_TRY(Value * right, b.mulScalar(xChain, 0.5 * k));
          return b.add(left, right);
        }
        // y = x Phi(x): y' = Phi(x) + x phi(x).
        KILN_TRY(Value * scaled, b.mulScalar(x, 1.0 / std::numbers::sqrt2));
        KILN_TRY(Value * erfValue, b.op(OpKind::Erf, {scaled}));
        KILN_TRY(Value * onePlusErf, b.add(one, erfValue));
        KILN_TRY(Value * cdf, b.mulScalar(onePlusErf, 0.5));
        KILN_TRY(Value * halfSquare, b.mulScalar(square, -0.5));
        KILN_TRY(Value * gaussian, b.op(OpKind::Exp, {halfSquare}));
        KILN_TRY(Value * pdf, b.mulScalar(gaussian, 1.0 / std::sqrt(2.0 * std::numbers::pi)));
        KILN_TRY(Value * xPdf, b.mul(x, pdf));
        return b.add(cdf, xPdf);
      });
}

Expected<Gradients> gradientSilu(Graph &graph, const Node &node, Value *g) {
  // d x s(x) = s (1 + x (1 - s)).
  return unary(graph, node, g, [](GradientBuilder &b, Value *x, Value *) -> Expected<Value *> {
    KILN_TRY(Value * one, b.scalar(1.0, x->type().dtype));
    KILN_TRY(Value * s, b.op(OpKind::Sigmoid, {x}));
    KILN_TRY(Value * complement, b.sub(one, s));
    KILN_TRY(Value * product, b.mul(x, complement));
    KILN_TRY(Value * sum, b.add(one, product));
    return b.mul(s, sum);
  });
}

Expected<Gradients> gradientErf(Graph &graph, const Node &node, Value *g) {
  // d erf(x) = 2 / sqrt(pi) e^(-x^2).
  return unary(graph, node, g, [](GradientBuilder &b, Value *x, Value *) -> Expected<Value *> {
    KILN_TRY(Value * square, b.mul(x, x));
    KILN_TRY(Value * negated, b.neg(square));
    KILN_TRY(Value * gaussian, b.op(OpKind::Exp, {negated}));
    return b.mulScalar(gaussian, 2.0 / std::sqrt(std::numbers::pi));
  });
}

Expected<Gradients> gradientSin(Graph &graph, const Node &node, Value *g) {
  return unary(graph, node, g, [](GradientBuilder &b, Value *x, Value *) -> Expected<Value *> {
    return b.op(OpKind::Cos, {x});
  });
}

Expected<Gradients> gradientCos(Graph &graph, const Node &node, Value *g) {
  return unary(graph, node, g, [](GradientBuilder &b, Value *x, Value *) -> Expected<Value *> {
    KILN_TRY(Value * sine, b.op(OpKind::Sin, {x}));
    return b.neg(sine);
  });
}

Expected<Gradients> gradientCast(Graph &graph, const Node &node, Value *g) {
  // The gradient goes back through a cast to the operand's dtype; an integer
  // or bool operand takes none (its derivative is zero almost everywhere).
  DType from = node.operand(0)->type().dtype;
  if (!isFloatingPoint(from))
    return Gradients{nullptr};
  GradientBuilder b(graph, node);
  KILN_TRY(Value * gradient, b.castTo(g, from));
  return Gradients{gradient};
}

Expected<Gradients> gradientClamp(Graph &graph, const Node &node, Value *g) {
  // Passes through inside [min, max], bounds included; 0 outside.
  GradientBuilder b(graph, node);
  Value *x = node.operand(0);
  KILN_TRY(Value * aboveMin, compareScalar(b, OpKind::Ge, x, getFloat(node.attrs(), "min")));
  KILN_TRY(Value * belowMax, compareScalar(b, OpKind::Le, x, getFloat(node.attrs(), "max")));
  KILN_TRY(Value * inside, b.op(OpKind::And, {aboveMin, belowMax}));
  KILN_TRY(Value * gradient, keepWhere(b, inside, g));
  return Gradients{gradient};
}

Expected<Gradients> gradientAdd(Graph &graph, const Node &node, Value *g) {
  GradientBuilder b(graph, node);
  KILN_TRY(Value * da, b.sumToShape(g, node.operand(0)->type().sizes()));
  KILN_TRY(Value * db, b.sumToShape(g, node.operand(1)->type().sizes()));
  return Gradients{da, db};
}

Expected<Gradients> gradientSub(Graph &graph, const Node &node, Value *g) {
  GradientBuilder b(graph, node);
  KILN_TRY(Value * da, b.sumToShape(g, node.operand(0)->type().sizes()));
  KILN_TRY(Value * negated, b.neg(g));
  KILN_TRY(Value * db, b.sumToShape(negated, node.operand(1)->type().sizes()));
  return Gradients{da, db};
}

Expected<Gradients> gradientMul(Graph &graph, const Node &node, Value *g) {
  GradientBuilder b(graph, node);
  Value *a = node.operand(0), *c = node.operand(1);
  KILN_TRY(Value * ga, b.mul(g, c));
  KILN_TRY(Value * gc, b.mul(g, a));
  KILN_TRY(Value * da, b.sumToShape(ga, a->type().sizes()));
  KILN_TRY(Value * dc, b.sumToShape(gc, c->type().sizes()));
  return Gradients{da, dc};
}

Expected<Gradients> gradientDiv(Graph &graph, const Node &node, Value *g) {
  // y = a / c: da = g / c, dc = -g y / c.
  GradientBuilder b(graph, node);
  Value *a = node.operand(0), *c = node.operand(1);
  KILN_TRY(Value * ga, b.div(g, c));
  KILN_TRY(Value * gy, b.mul(ga, resultOf(node)));
  KILN_TRY(Value * gc, b.neg(gy));
  KILN_TRY(Value * da, b.sumToShape(ga, a->type().sizes()));
  KILN_TRY(Value * dc, b.sumToShape(gc, c->type().sizes()));
  return Gradients{da, dc};
}

Expected<Gradients> gradientPow(Graph &graph, const Node &node, Value *g) {
  // y = a^c: da = g c a^(c-1); dc = g y log(a) where a > 0, and 0 where
  // a <= 0 (there a^c is only defined for integer c, a set of no measure).
  GradientBuilder b(graph, node);
  Value *a = node.operand(0), *c = node.operand(1);
  DType dtype = node.type().dtype;
  KILN_TRY(Value * one, b.scalar(1.0, dtype));
  KILN_TRY(Value * cMinusOne, b.sub(c, one));
  KILN_TRY(Value * power, b.op(OpKind::Pow, {a, cMinusOne}));
  KILN_TRY(Value * slope, b.mul(c, power));
  KILN_TRY(Value * ga, b.mul(g, slope));
  KILN_TRY(Value * positive, compareScalar(b, OpKind::Gt, a, 0.0));
  KILN_TRY(Value * safeBase, b.where(positive, a, one));
  KILN_TRY(Value * logBase, b.op(OpKind::Log, {safeBase}));
  KILN_TRY(Value * yLog, b.mul(resultOf(node), logBase));
  KILN_TRY(Value * gyLog, b.mul(g, yLog));
  KILN_TRY(Value * gc, keepWhere(b, positive, gyLog));
  KILN_TRY(Value * da, b.sumToShape(ga, a->type().sizes()));
  KILN_TRY(Value * dc, b.sumToShape(gc, c->type().sizes()));
  return Gradients{da, dc};
}

Expected<Gradients> gradientMax(Graph &graph, const Node &node, Value *g) {
  return extremum(graph, node, g, OpKind::Gt);
}

Expected<Gradients> gradientMin(Graph &graph, const Node &node, Value *g) {
  return extremum(graph, node, g, OpKind::Lt);
}

Expected<Gradients> gradientWhere(Graph &graph, const Node &node, Value *g) {
  // The condition takes none; each branch gets g where it was chosen.
  GradientBuilder b(graph, node);
  Value *condition = node.operand(0), *a = node.operand(1), *c = node.operand(2);
  KILN_TRY(Value * zero, b.scalar(0.0, g->type().dtype));
  KILN_TRY(Value * ga, b.where(condition, g, zero));
  KILN_TRY(Value * gc, b.where(condition, zero, g));
  KILN_TRY(Value * da, b.sumToShape(ga, a->type().sizes()));
  KILN_TRY(Value * dc, b.sumToShape(gc, c->type().sizes()));
  return Gradients{nullptr, da, dc};
}

} // namespace kiln::ir
