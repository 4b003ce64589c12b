// The element function of every free op (elementwise and data movement) as
// kernel IR, matching the reference interpreter's semantics: NaN-propagating
// max/min, wrapping integer arithmetic, guarded integer division, the graph's
// cast rules, and index ops that can never read out of bounds.
#include "passes/lower/ElementEmitter.h"

#include "ir/graph/ShapeInference.h"
#include "ir/kernel/Builder.h"
#include "passes/lower/LowerUtil.h"
#include "passes/lower/RuntimeSizes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

namespace kiln::lower {

using namespace kiln::kir;
using ir::OpKind;
using ir::Shape;

namespace {

using Index = std::vector<ExprPtr>;

int64_t wrapAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// The index of an operand NumPy-broadcast to `result`: missing leading axes
/// are dropped and the operand's size-1 axes read element 0.
Index broadcastIndex(std::span<const ExprPtr> index, const Shape &operand, const Shape &result) {
  size_t offset = result.size() - operand.size();
  Index out;
  for (size_t k = 0; k < operand.size(); ++k)
    out.push_back(operand[k] == 1 ? kir::index(0) : index[offset + k]);
  return out;
}

/// Same-kind expressions that compute the same index (for the memo).
bool sameIndexExpr(const ExprPtr &a, const ExprPtr &b) {
  if (a == b)
    return true;
  if (a->kind() != b->kind() || a->type() != b->type())
    return false;
  if (auto ia = as<IntImm>(*a))
    return ia->value == as<IntImm>(*b)->value;
  if (auto va = as<VarRef>(*a))
    return va->var == as<VarRef>(*b)->var;
  if (auto ba = as<Binary>(*a)) {
    auto bb = as<Binary>(*b);
    return ba->op == bb->op && sameIndexExpr(ba->lhs, bb->lhs) && sameIndexExpr(ba->rhs, bb->rhs);
  }
  return false;
}

// ---- arithmetic helpers (operands already in their compute type)

ExprPtr imm(double value, Type type) { return constant(value, type); }

ExprPtr isNan(const ExprPtr &x) { return ne(x, x); }

/// max with NaN propagation, keeping `a > b ? a : b` for the rest (the reference's rule).
ExprPtr maxPropagatingNaN(const ExprPtr &a, const ExprPtr &b) {
  if (!isFloatingPoint(a->type().dtype))
    return max(a, b);
  return select(logicalOr(gt(a, b), isNan(a)), a, b);
}

ExprPtr minPropagatingNaN(const ExprPtr &a, const ExprPtr &b) {
  if (!isFloatingPoint(a->type().dtype))
    return min(a, b);
  return select(logicalOr(lt(a, b), isNan(a)), a, b);
}

ExprPtr sigmoidOf(const ExprPtr &x) {
  Type t = x->type();
  return div(imm(1.0, t), add(imm(1.0, t), call(Intrinsic::Exp, {neg(x)})));
}

/// Integer division as the reference does it: truncating, x / 0 == 0, and
/// MIN / -1 wrapping to MIN, with no operation that could trap.
ExprPtr integerDivide(const ExprPtr &a, const ExprPtr &b) {
  Type t = a->type();
  ExprPtr zero = imm(0, t), minusOne = imm(-1, t);
  ExprPtr isZero = eq(b, zero), isMinusOne = eq(b, minusOne);
  ExprPtr safe = select(logicalOr(isZero, isMinusOne), imm(1, t), b);
  return select(isZero, zero, select(isMinusOne, neg(a), div(a, safe)));
}

/// clamp on integers with float bounds: the reference clamps in fp64 and
/// truncates (and wraps) the result to the dtype. Bounds are non-NaN and low <= high.
ExprPtr integerClamp(const ExprPtr &x, double low, double high) {
  DType dtype = x->type().dtype;
  Type t = x->type();
  double minT = -std::ldexp(1.0, dtypeByteSize(dtype) * 8 - 1);
  double maxT = std::ldexp(1.0, dtypeByteSize(dtype) * 8 - 1); // exclusive
  // For an integer x: x < low <=> x < ceil(low), x > high <=> x > floor(high).
  double lowCeil = std::ceil(low), highFloor = std::floor(high);
  ExprPtr below = lowCeil >= maxT    ? boolImm(true)
                  : lowCeil <= minT ? boolImm(false)
                                    : lt(x, intImm(static_cast<int64_t>(lowCeil), t));
  ExprPtr above = highFloor >= maxT  ? boolImm(false)
                  : highFloor < minT ? boolImm(true)
                                     : gt(x, intImm(static_cast<int64_t>(highFloor), t));
  ExprPtr lowValue = dtypeConstant(low, dtype), highValue = dtypeConstant(high, dtype);
  return select(below, lowValue, select(above, highValue, x));
}

/// A select on values of `dtype` (narrow floats select in f32: exact).
ExprPtr selectValue(const ExprPtr &cond, const ExprPtr &a, const ExprPtr &b, DType dtype) {
  if (!isNarrowFloat(dtype))
    return select(cond, a, b);
  return fromCompute(select(cond, toCompute(a), toCompute(b)), dtype);
}

/// An index value of any integer dtype resolved as the reference resolves it
/// (negative counts from the end), then clamped into [0, size) so a bad index
/// reads a valid element instead of out of bounds (the reference reports it).
ExprPtr resolveIndex(const ExprPtr &raw, int64_t size) {
  ExprPtr i = cast(raw, Type::index());
  ExprPtr resolved = select(lt(i, kir::index(0)), add(i, kir::index(size)), i);
  return clampIndex(resolved, 0, std::max<int64_t>(size - 1, 0));
}

/// Maps an index of `out` to the index of `in` for a row-major reshape. Axes
/// are matched in groups with equal products, so a reshape that only splits,
/// merges or adds unit axes costs no division for the axes it leaves alone.
Index reshapeIndex(std::span<const ExprPtr> index, const Shape &out, const Shape &in) {
  Index result(in.size(), kir::index(0));
  if (product(out) == 0)
    return result; // never evaluated: the loop nest over an empty tensor is empty
  std::vector<size_t> outAxes, inAxes;
  for (size_t k = 0; k < out.size(); ++k)
    if (out[k] != 1)
      outAxes.push_back(k);
  for (size_t k = 0; k < in.size(); ++k)
    if (in[k] != 1)
      inAxes.push_back(k);
  size_t i = 0, j = 0;
  while (i < outAxes.size() && j < inAxes.size()) {
    size_t i0 = i, j0 = j;
    int64_t po = out[outAxes[i++]], pi = in[inAxes[j++]];
    while (po != pi) {
      if (po < pi)
        po *= out[outAxes[i++]];
      else
        pi *= in[inAxes[j++]];
    }
    if (i - i0 == 1 && j - j0 == 1) {
      result[inAxes[j0]] = index[outAxes[i0]];
      continue;
    }
    ExprPtr flat = kir::index(0);
    int64_t stride = 1;
    for (size_t k = i; k-- > i0;) {
      flat = add(flat, mul(index[outAxes[k]], kir::index(stride)));
      stride *= out[outAxes[k]];
    }
    std::vector<int64_t> extents;
    for (size_t k = j0; k < j; ++k)
      extents.push_back(in[inAxes[k]]);
    Index parts = delinearize(flat, extents);
    for (size_t k = j0; k < j; ++k)
      result[inAxes[k]] = parts[k - j0];
  }
  return result;
}

class NodeEmitter {
public:
  NodeEmitter(ElementEmitter &emitter, const ir::Node &node, std::span<const ExprPtr> index)
      : emitter_(emitter), node_(node), index_(index), dtype_(node.type().dtype),
        t_(computeType(dtype_)) {}

  Expected<ExprPtr> emit();

private:
  const Shape &shape() const { return node_.type().shape; }
  const ir::AttrMap &attrs() const { return node_.attrs(); }

  /// Operand `i` at the broadcast of the node's index, in its storage dtype.
  Expected<ExprPtr> operandAt(size_t i) {
    const ir::Value *operand = node_.operand(i);
    Index idx = broadcastIndex(index_, operand->type().shape, shape());
    return emitter_.at(operand, idx);
  }
  /// Operand `i` in its compute type.
  Expected<ExprPtr> computeOperand(size_t i) {
    KILN_TRY(ExprPtr value, operandAt(i));
    return toCompute(value);
  }
  ExprPtr result(ExprPtr computed) { return fromCompute(std::move(computed), dtype_); }

  Expected<ExprPtr> unary();
  Expected<ExprPtr> binary();
  Expected<ExprPtr> compare();
  Expected<ExprPtr> batchNorm();
  Expected<ExprPtr> movement();
  Expected<ExprPtr> concat();
  Expected<ExprPtr> pad();
  Expected<ExprPtr> gather();
  Expected<ExprPtr> takeAlongAxis();

  ElementEmitter &emitter_;
  const ir::Node &node_;
  std::span<const ExprPtr> index_;
  DType dtype_;
  Type t_;
};

Expected<ExprPtr> NodeEmitter::unary() {
  if (node_.kind() == OpKind::Cast) {
    KILN_TRY(ExprPtr x, operandAt(0));
    return cast(x, Type::scalar(dtype_));
  }
  if (node_.kind() == OpKind::Not) {
    KILN_TRY(ExprPtr x, operandAt(0));
    return logicalNot(x);
  }
  KILN_TRY(ExprPtr x, computeOperand(0));
  bool isFloat = isFloatingPoint(dtype_);
  switch (node_.kind()) {
  case OpKind::Neg: return result(neg(x));
  case OpKind::Abs:
    return result(isFloat ? call(Intrinsic::Abs, {x}) : select(lt(x, imm(0, t_)), neg(x), x));
  case OpKind::Exp: return result(call(Intrinsic::Exp, {x}));
  case OpKind::Log: return result(call(Intrinsic::Log, {x}));
  case OpKind::Sqrt: return result(call(Intrinsic::Sqrt, {x}));
  case OpKind::Rsqrt: return result(call(Intrinsic::Rsqrt, {x}));
  case OpKind::Tanh: return result(call(Intrinsic::Tanh, {x}));
  case OpKind::Erf: return result(call(Intrinsic::Erf, {x}));
  case OpKind::Sin: return result(call(Intrinsic::Sin, {x}));
  case OpKind::Cos: return result(call(Intrinsic::Cos, {x}));
  case OpKind::Sigmoid: return result(sigmoidOf(x));
  case OpKind::Silu: return result(div(x, add(imm(1.0, t_), call(Intrinsic::Exp, {neg(x)}))));
  case OpKind::Relu:
    // x <= 0 ? 0 : x keeps NaN (the comparison is false) and turns -0 into 0,
    // as the reference's max(x, 0) does.
    return result(isFloat ? select(le(x, imm(0, t_)), imm(0, t_), x) : max(x, imm(0, t_)));
  case OpKind::Gelu: {
    ExprPtr half = imm(0.5, t_), one = imm(1.0, t_);
    if (ir::getString(attrs(), "approximate") == "tanh") {
      ExprPtr cube = mul(mul(x, x), x);
      ExprPtr inner = mul(imm(0.7978845608028654, t_), add(x, mul(imm(0.044715, t_), cube)));
      return result(mul(mul(half, x), add(one, call(Intrinsic::Tanh, {inner}))));
    }
    ExprPtr scaled = mul(x, imm(1.0 / std::numbers::sqrt2, t_));
    return result(mul(mul(half, x), add(one, call(Intrinsic::Erf, {scaled}))));
  }
  case OpKind::Clamp: {
    double low = ir::getFloat(attrs(), "min"), high = ir::getFloat(attrs(), "max");
    if (!isFloat)
      return integerClamp(x, low, high);
    ExprPtr lowC = toCompute(dtypeConstant(low, dtype_));
    ExprPtr highC = toCompute(dtypeConstant(high, dtype_));
    return result(minPropagatingNaN(maxPropagatingNaN(x, lowC), highC));
  }
  default: break;
  }
  return std::unexpected(unsupportedNode(node_, "no element function"));
}

Expected<ExprPtr> NodeEmitter::binary() {
  KILN_TRY(ExprPtr a, computeOperand(0));
  KILN_TRY(ExprPtr b, computeOperand(1));
  bool isInt = isInteger(dtype_);
  switch (node_.kind()) {
  case OpKind::Add: return result(add(a, b));
  case OpKind::Sub: return result(sub(a, b));
  case OpKind::Mul: return result(mul(a, b));
  case OpKind::Div: return result(isInt ? integerDivide(a, b) : div(a, b));
  case OpKind::Pow: return result(call(Intrinsic::Pow, {a, b}));
  case OpKind::Max: return result(maxPropagatingNaN(a, b));
  case OpKind::Min: return result(minPropagatingNaN(a, b));
  case OpKind::And: return logicalAnd(a, b);
  case OpKind::Or: return logicalOr(a, b);
  default: break;
  }
  return std::unexpected(unsupportedNode(node_, "no element function"));
}

Expected<ExprPtr> NodeEmitter::compare() {
  KILN_TRY(ExprPtr a, computeOperand(0));
  KILN_TRY(ExprPtr b, computeOperand(1));
  OpKind kind = node_.kind();
  // Ordering bools as 1-bit integers would be signed (true < false): widen them.
  if (a->type().dtype == DType::Bool && kind != OpKind::Eq && kind != OpKind::Ne) {
    a = cast(a, Type::scalar(DType::I32));
    b = cast(b, Type::scalar(DType::I32));
  }
  switch (kind) {
  case OpKind::Eq: return eq(a, b);
  case OpKind::Ne: return ne(a, b);
  case OpKind::Lt: return lt(a, b);
  case OpKind::Le: return le(a, b);
  case OpKind::Gt: return gt(a, b);
  case OpKind::Ge: return ge(a, b);
  default: break;
  }
  KILN_UNREACHABLE("compare: not a comparison");
}

Expected<ExprPtr> NodeEmitter::batchNorm() {
  int64_t axis = wrapAxis(ir::getInt(attrs(), "axis"), node_.type().rank());
  double epsilon = ir::getFloat(attrs(), "epsilon");
  Index channel{index_[static_cast<size_t>(axis)]};
  KILN_TRY(ExprPtr x, emitter_.at(node_.operand(0), index_));
  std::vector<ExprPtr> params;
  for (size_t i = 1; i < 5; ++i) {
    KILN_TRY(ExprPtr p, emitter_.at(node_.operand(i), channel));
    params.push_back(toCompute(p));
  }
  // (x - mean) * (scale / sqrt(var + epsilon)) + bias, as the reference groups it.
  ExprPtr multiplier =
      div(params[0], call(Intrinsic::Sqrt, {add(params[3], imm(epsilon, t_))}));
  return result(add(mul(sub(toCompute(x), params[2]), multiplier), params[1]));
}

Expected<ExprPtr> NodeEmitter::concat() {
  int64_t axis = wrapAxis(ir::getInt(attrs(), "axis"), node_.type().rank());
  size_t a = static_cast<size_t>(axis);
  ExprPtr position = index_[a];
  // Every arm is evaluated (a select), so each reads at an index clamped into
  // its own operand; only the chosen arm's index is the real one.
  std::vector<std::pair<int64_t, ExprPtr>> arms; // (end offset, value in compute type)
  int64_t offset = 0;
  for (size_t i = 0; i < node_.numOperands(); ++i) {
    const ir::Value *operand = node_.operand(i);
    int64_t size = operand->type().shape[a];
    if (size == 0)
      continue;
    Index idx(index_.begin(), index_.end());
    idx[a] = clampIndex(sub(position, kir::index(offset)), 0, size - 1);
    KILN_TRY(ExprPtr value, emitter_.at(operand, idx));
    offset += size;
    arms.emplace_back(offset, toCompute(value));
  }
  if (arms.empty()) // an empty result: never evaluated
    return dtypeConstant(0, dtype_);
  // A balanced tree of selects: a concat of 20,000 operands is 15 selects
  // deep, not 20,000 (every later pass walks the expression recursively).
  std::function<ExprPtr(size_t, size_t)> choose = [&](size_t first, size_t last) -> ExprPtr {
    if (last - first == 1)
      return arms[first].second;
    size_t middle = first + (last - first) / 2;
    return select(lt(position, kir::index(arms[middle - 1].first)), choose(first, middle),
                  choose(middle, last));
  };
  return result(choose(0, arms.size()));
}

Expected<ExprPtr> NodeEmitter::pad() {
  const auto &low = ir::getInts(attrs(), "low");
  const Shape &in = node_.operand(0)->type().shape;
  ExprPtr padValue = dtypeConstant(ir::getFloat(attrs(), "value"), dtype_);
  if (product(in) == 0)
    return padValue;
  ExprPtr inside = boolImm(true);
  Index idx;
  for (size_t k = 0; k < in.size(); ++k) {
    ExprPtr shifted = sub(index_[k], kir::index(low[k]));
    bool padsHigh = shape()[k] > low[k] + in[k];
    if (low[k] > 0)
      inside = logicalAnd(inside, ge(shifted, kir::index(0)));
    if (padsHigh)
      inside = logicalAnd(inside, lt(shifted, kir::index(in[k])));
    // The operand is evaluated at every index (a select), so keep it in bounds.
    idx.push_back(low[k] > 0 || padsHigh ? clampIndex(shifted, 0, in[k] - 1) : shifted);
  }
  KILN_TRY(ExprPtr value, emitter_.at(node_.operand(0), idx));
  if (auto c = constIntValue(inside); c && *c == 1)
    return value;
  return selectValue(inside, value, padValue, dtype_);
}

Expected<ExprPtr> NodeEmitter::gather() {
  const Shape &data = node_.operand(0)->type().shape;
  const Shape &indices = node_.operand(1)->type().shape;
  size_t axis = static_cast<size_t>(wrapAxis(ir::getInt(attrs(), "axis"), ir::TensorType{.shape = data}.rank()));
  Index indexIdx(index_.begin() + axis, index_.begin() + axis + indices.size());
  KILN_TRY(ExprPtr raw, emitter_.at(node_.operand(1), indexIdx));
  Index dataIdx(index_.begin(), index_.begin() + axis);
  dataIdx.push_back(resolveIndex(raw, data[axis]));
  dataIdx.insert(dataIdx.end(), index_.begin() + axis + indices.size(), index_.end());
  return emitter_.at(node_.operand(0), dataIdx);
}

Expected<ExprPtr> NodeEmitter::takeAlongAxis() {
  const Shape &data = node_.operand(0)->type().shape;
  size_t axis = static_cast<size_t>(wrapAxis(ir::getInt(attrs(), "axis"), static_cast<int64_t>(data.size())));
  KILN_TRY(ExprPtr raw, emitter_.at(node_.operand(1), index_));
  Index dataIdx(index_.begin(), index_.end());
  dataIdx[axis] = resolveIndex(raw, data[axis]);
  return emitter_.at(node_.operand(0), dataIdx);
}

Expected<ExprPtr> NodeEmitter::movement() {
  switch (node_.kind()) {
  case OpKind::Reshape:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze: {
    const ir::Value *x = node_.operand(0);
    return emitter_.at(x, reshapeIndex(index_, shape(), x->type().shape));
  }
  case OpKind::Transpose: {
    const auto &perm = ir::getInts(attrs(), "perm");
    Index idx(perm.size());
    for (size_t k = 0; k < perm.size(); ++k)
      idx[static_cast<size_t>(perm[k])] = index_[k];
    return emitter_.at(node_.operand(0), idx);
  }
  case OpKind::BroadcastTo: return operandAt(0);
  case OpKind::Slice: {
    const Shape &in = node_.operand(0)->type().shape;
    const auto &starts = ir::getInts(attrs(), "starts");
    const auto &steps = ir::getInts(attrs(), "steps");
    Index idx;
    for (size_t k = 0; k < in.size(); ++k) {
      int64_t first = in[k] - ir::sliceLength(in[k], starts[k], in[k], 1);
      idx.push_back(add(kir::index(first), mul(index_[k], kir::index(steps[k]))));
    }
    return emitter_.at(node_.operand(0), idx);
  }
  case OpKind::Concat: return concat();
  case OpKind::Pad: return pad();
  case OpKind::Gather: return gather();
  case OpKind::TakeAlongAxis: return takeAlongAxis();
  case OpKind::Iota: {
    int64_t axis = wrapAxis(ir::getInt(attrs(), "axis"), node_.type().rank());
    return cast(index_[static_cast<size_t>(axis)], Type::scalar(dtype_));
  }
  case OpKind::SymbolSize: {
    RuntimeSizes *sizes = emitter_.runtimeSizes();
    if (sizes == nullptr)
      return std::unexpected(unsupportedNode(node_, "this kernel does not read the run's sizes"));
    return cast((*sizes)(ir::getSizes(attrs(), "size").front()), Type::scalar(dtype_));
  }
  case OpKind::Constant: {
    const auto &values = ir::getFloats(attrs(), "value");
    if (values.size() == 1 || node_.type().numElements() == 1)
      return dtypeConstant(values[0], dtype_);
    return std::unexpected(unsupportedNode(
        node_, "a constant of more than one element must be materialized (its own group)"));
  }
  default: break;
  }
  return std::unexpected(unsupportedNode(node_, "no element function"));
}

Expected<ExprPtr> NodeEmitter::emit() {
  switch (node_.kind()) {
  case OpKind::Eq:
  case OpKind::Ne:
  case OpKind::Lt:
  case OpKind::Le:
  case OpKind::Gt:
  case OpKind::Ge: return compare();
  case OpKind::Where: {
    KILN_TRY(ExprPtr cond, operandAt(0));
    KILN_TRY(ExprPtr a, operandAt(1));
    KILN_TRY(ExprPtr b, operandAt(2));
    return selectValue(cond, a, b, dtype_);
  }
  case OpKind::BatchNorm: return batchNorm();
  default: break;
  }
  switch (node_.info().category) {
  case ir::OpCategory::Elementwise:
    return node_.numOperands() == 1 ? unary() : binary();
  case ir::OpCategory::DataMovement: return movement();
  default:
    return std::unexpected(unsupportedNode(
        node_, "an anchor has no element function; its lowering must override its value"));
  }
}

} // namespace

ElementEmitter::ElementEmitter(const passes::FusionGroup &group, const BufferMap &buffers)
    : group_(group), buffers_(buffers) {}

void ElementEmitter::overrideValue(const ir::Value *value, ElementFn fn) {
  overrides_[value] = std::move(fn);
  memo_.clear(); // elements built before may depend on the old definition
}

Expected<ExprPtr> ElementEmitter::at(const ir::Value *value, std::span<const ExprPtr> index) {
  KILN_CHECK(static_cast<int64_t>(index.size()) == value->type().rank(),
             fmt::format("ElementEmitter::at: {} indices for a value of type {}", index.size(),
                         value->type().str()));
  if (auto it = overrides_.find(value); it != overrides_.end())
    return it->second(index);
  for (const MemoEntry &entry : memo_)
    if (entry.value == value &&
        std::equal(entry.index.begin(), entry.index.end(), index.begin(), index.end(),
                   sameIndexExpr))
      return entry.element;
  ExprPtr element;
  const ir::Node *node = value->definingNode();
  if (node != nullptr && group_.contains(node)) {
    NodeEmitter emitter(*this, *node, index);
    KILN_TRY(element, emitter.emit());
  } else {
    auto it = buffers_.find(value);
    KILN_CHECK(it != buffers_.end(),
               fmt::format("ElementEmitter: no buffer for an input of group {} ({})", group_.id,
                           value->type().str()));
    element = load(it->second, linearIndex(index, value->type().shape));
  }
  KILN_CHECK(element->type() == Type::scalar(value->type().dtype),
             fmt::format("ElementEmitter: element of {} has dtype {}", value->type().str(),
                         dtypeName(element->type().dtype)));
  memo_.push_back(MemoEntry{value, Index(index.begin(), index.end()), element});
  return element;
}

} // namespace kiln::lower
