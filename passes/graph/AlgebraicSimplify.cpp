// "simplify": local algebraic identities that remove or merge nodes without
// changing any result, applied until none matches (a fixed-point pass).
//
// Why: the DSL, autodiff, decompositions and layout changes leave behind
// no-op arithmetic (x * 1), pairs that cancel (neg of neg, transpose of its
// inverse) and chains of data movement that fusion would otherwise have to
// see through. Every rule is exact: the simplified graph computes the same
// bits, the sign of zero included (kiln checks numerics against a reference
// bit for bit), so for floats only x + (-0.0) and x - (+0.0) are identities:
// -0 + +0 is +0, and -0 - -0 is +0. Nodes left unused are erased by "dce".
// The rules, each documented in docs/passes.md:
//   x * 1, 1 * x, x / 1 -> x; for floats x + (-0), (-0) + x, x - (+0) -> x;
//       for integers x + 0, 0 + x, x - 0 -> x   (the constant is a splat of
//       exactly that value after rounding to its dtype, and x already has the
//       result's type, so no broadcast or type change is lost)
//   neg(neg(x)) -> x
//   transpose(transpose(x, p), q) -> transpose(x, p o q); identity perm -> x
//   transpose(x, p) that keeps x's non-unit axes in order -> reshape
//   any chain of reshape/squeeze/unsqueeze -> one reshape; to the same shape -> x
//   cast(x, dtype of x) -> x
//   cast(cast(x, a), b) -> cast(x, b) when a represents every value of x's
//       dtype exactly (f16 -> f32 -> f64 yes; f32 -> f16 -> f32 no)
//   broadcast_to(x, shape of x) -> x
//   slice(x) with full ranges and step 1 (result type == x's type) -> x
#include "passes/graph/GraphPasses.h"

#include "ir/graph/Graph.h"
#include "passes/graph/ReplaceNodes.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>

namespace kiln::passes {

namespace {

using ir::Node;
using ir::OpKind;
using ir::Value;

/// Two elements of a constant of `dtype` are the same: for floats the same
/// bits (so -0 and +0 differ), for integers and bools the same number.
bool sameElement(double a, double b, DType dtype) {
  if (!isFloatingPoint(dtype))
    return a == b;
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

/// The single value of a constant whose elements (rounded to its dtype, as
/// the interpreter reads them) are all the same; nullopt for anything else.
std::optional<double> splatValue(const Value *value) {
  const Node *node = value->definingNode();
  if (!node || node->kind() != OpKind::Constant)
    return std::nullopt;
  const std::vector<double> &values = ir::getFloats(node->attrs(), "value");
  DType dtype = node->type().dtype;
  if (values.empty())
    return std::nullopt;
  double first = roundToDType(values.front(), dtype);
  for (double v : values)
    if (!sameElement(roundToDType(v, dtype), first, dtype))
      return std::nullopt;
  return first;
}

/// Whether `value` is a constant splat of exactly `expected`; for floats the
/// sign of zero must match too.
bool isSplatOf(const Value *value, double expected) {
  std::optional<double> splat = splatValue(value);
  return splat && !std::isnan(*splat) && *splat == expected &&
         sameElement(*splat, expected, value->type().dtype);
}

/// The zero that add leaves every value of `dtype` unchanged with, bit for
/// bit: -0.0 for floats (+0 is not: -0 + +0 is +0), 0 for integers. The
/// zero of sub is its negation: x - (+0) = x + (-0).
double additiveIdentity(DType dtype) { return isFloatingPoint(dtype) ? -0.0 : 0.0; }

/// x op c -> x where c is the identity of op and x already has the result type.
Value *identityOperand(Node &node) {
  Value *lhs = node.operand(0);
  Value *rhs = node.operand(1);
  auto keeps = [&](Value *x) { return x->type() == node.type(); };
  double zero = additiveIdentity(node.type().dtype);
  switch (node.kind()) {
  case OpKind::Add:
    if (isSplatOf(rhs, zero) && keeps(lhs))
      return lhs;
    if (isSplatOf(lhs, zero) && keeps(rhs))
      return rhs;
    return nullptr;
  case OpKind::Mul:
    if (isSplatOf(rhs, 1.0) && keeps(lhs))
      return lhs;
    if (isSplatOf(lhs, 1.0) && keeps(rhs))
      return rhs;
    return nullptr;
  case OpKind::Sub:
    return isSplatOf(rhs, -zero) && keeps(lhs) ? lhs : nullptr;
  case OpKind::Div:
    return isSplatOf(rhs, 1.0) && keeps(lhs) ? lhs : nullptr;
  default:
    return nullptr;
  }
}

Node *producer(const Value *value, OpKind kind) {
  Node *node = value->definingNode();
  return node && node->kind() == kind ? node : nullptr;
}

bool isReshapeLike(OpKind kind) {
  return kind == OpKind::Reshape || kind == OpKind::Squeeze || kind == OpKind::Unsqueeze;
}

/// Whether every value of `from` is exactly representable in `to`, so a cast
/// to `to` and onwards loses nothing.
bool isExactConversion(DType from, DType to) {
  if (from == to || from == DType::Bool)
    return true;
  switch (from) {
  case DType::I8:
    return to == DType::I32 || to == DType::I64 || to == DType::F16 || to == DType::BF16 ||
           to == DType::F32 || to == DType::F64;
  case DType::I32:
    return to == DType::I64 || to == DType::F64;
  case DType::F8E4M3:
  case DType::F8E5M2:
    return to == DType::F16 || to == DType::BF16 || to == DType::F32 || to == DType::F64;
  case DType::F16:
  case DType::BF16:
    return to == DType::F32 || to == DType::F64;
  case DType::F32:
    return to == DType::F64;
  default:
    return false;
  }
}

class AlgebraicSimplify final : public Pass {
public:
  std::string_view name() const override { return "simplify"; }
  std::string_view description() const override {
    return "removes no-op arithmetic and merges chains of casts and data movement";
  }
  bool runsToFixedPoint() const override { return true; }

  Expected<bool> run(ir::Graph &graph) override {
    return replaceNodes(graph, name(), [&](Node &node) { return simplify(graph, node); });
  }

private:
  /// The value that replaces `node`'s result, or nullptr when no rule matches.
  static Expected<Value *> simplify(ir::Graph &graph, Node &node) {
    Value *x = node.numOperands() > 0 ? node.operand(0) : nullptr;
    switch (node.kind()) {
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
      return identityOperand(node);
    case OpKind::Neg:
      if (Node *inner = producer(x, OpKind::Neg))
        return inner->operand(0);
      return nullptr;
    case OpKind::Transpose:
      return simplifyTranspose(graph, node);
    case OpKind::Reshape:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
      return simplifyReshape(graph, node);
    case OpKind::Cast:
      return simplifyCast(graph, node);
    case OpKind::BroadcastTo:
    case OpKind::Slice:
      // Same type means the same shape: a broadcast to x's own shape, or a
      // slice that keeps every element (step 1, full range).
      return x->type() == node.type() ? x : nullptr;
    default:
      return nullptr;
    }
  }

  /// Whether `perm` keeps the axes of size other than 1 in their order: then
  /// the elements stay in the same order and the transpose is a reshape.
  static bool movesOnlyUnitAxes(const ir::Shape &shape, const std::vector<int64_t> &perm) {
    int64_t last = -1;
    for (int64_t axis : perm) {
      if (shape.at(static_cast<size_t>(axis)) == 1)
        continue;
      if (axis < last)
        return false;
      last = axis;
    }
    return true;
  }

  static Expected<Value *> simplifyTranspose(ir::Graph &graph, Node &node) {
    Value *source = node.operand(0);
    std::vector<int64_t> perm = ir::getInts(node.attrs(), "perm");
    if (Node *inner = producer(source, OpKind::Transpose)) {
      // Result axis i is inner's axis perm[i], which is x's axis innerPerm[perm[i]].
      const std::vector<int64_t> &innerPerm = ir::getInts(inner->attrs(), "perm");
      for (int64_t &axis : perm)
        axis = innerPerm.at(static_cast<size_t>(axis));
      source = inner->operand(0);
    }
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
      identity &= perm[i] == static_cast<int64_t>(i);
    if (identity)
      return source;
    if (movesOnlyUnitAxes(source->type().shape, perm))
      return graph.addNode(OpKind::Reshape, {source}, reshapeTo(node.type()), node.location());
    if (source == node.operand(0))
      return nullptr;
    return graph.addNode(OpKind::Transpose, {source}, {{"perm", perm}}, node.location());
  }

  static Expected<Value *> simplifyReshape(ir::Graph &graph, Node &node) {
    Value *source = node.operand(0);
    if (Node *inner = source->definingNode(); inner && isReshapeLike(inner->kind()))
      source = inner->operand(0);
    if (source->type().sizes() == node.type().sizes())
      return source;
    if (source == node.operand(0))
      return nullptr;
    return graph.addNode(OpKind::Reshape, {source}, reshapeTo(node.type()), node.location());
  }

  /// A reshape's attributes for the result type `type` (a symbolic one with its sizes).
  static ir::AttrMap reshapeTo(const ir::TensorType &type) {
    ir::AttrMap attrs{{"shape", type.shape}};
    if (type.isSymbolic())
      attrs.emplace("sizes", type.symbolicDims);
    return attrs;
  }

  // cast(cast(x, a), b) equals cast(x, b) when x -> a is exact, except that an
  // integer going through a float saturates into an integer b (float-to-int
  // casts saturate) where the direct int-to-int cast would wrap.
  static bool castsCompose(DType from, DType middle, DType to) {
    if (!isExactConversion(from, middle))
      return false;
    bool saturatesInstead = isInteger(from) && isFloatingPoint(middle) && isInteger(to);
    return !saturatesInstead || isExactConversion(from, to);
  }

  static Expected<Value *> simplifyCast(ir::Graph &graph, Node &node) {
    Value *source = node.operand(0);
    DType target = node.type().dtype;
    if (Node *inner = producer(source, OpKind::Cast);
        inner && castsCompose(inner->operand(0)->type().dtype, inner->type().dtype, target))
      source = inner->operand(0);
    if (source->type().dtype == target)
      return source;
    if (source == node.operand(0))
      return nullptr;
    return graph.addNode(OpKind::Cast, {source}, {{"dtype", target}}, node.location());
  }
};

} // namespace

std::unique_ptr<Pass> createAlgebraicSimplifyPass() {
  return std::make_unique<AlgebraicSimplify>();
}

} // namespace kiln::passes
