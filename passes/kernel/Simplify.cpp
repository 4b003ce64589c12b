// simplify: constant folding, index-math identities and dead control flow
// removal on kernel IR. Lowering writes index math the obvious way (a split
// loop's index is (io * c + ii) / c ...) and leaves it to this pass to shorten.
// Folding calls the evaluator's one-lane semantics (ScalarOps.h), so a folded
// constant is exactly what the kernel would compute.
#include "passes/kernel/Passes.h"

#include "ir/kernel/Bounds.h"
#include "ir/kernel/Builder.h"
#include "ir/kernel/GpuLaunch.h"
#include "ir/kernel/IRUtils.h"
#include "ir/kernel/ScalarOps.h"
#include "ir/kernel/Visitor.h"

#include <bit>
#include <limits>

namespace kiln::kir {

namespace {

constexpr int64_t kMinI64 = std::numeric_limits<int64_t>::min();

/// The value of every lane of a constant (an immediate or a broadcast one).
std::optional<Scalar> constantLane(const ExprPtr &e) {
  switch (e->kind()) {
  case ExprKind::IntImm:
    return Scalar::ofInt(wrapInteger(static_cast<const IntImm &>(*e).value, e->type().dtype));
  case ExprKind::FloatImm: return Scalar::ofFloat(static_cast<const FloatImm &>(*e).value);
  case ExprKind::Broadcast: return constantLane(static_cast<const Broadcast &>(*e).value);
  default: return std::nullopt;
  }
}

std::optional<int64_t> intConstant(const ExprPtr &e) {
  if (isFloatingPoint(e->type().dtype))
    return std::nullopt;
  auto lane = constantLane(e);
  return lane ? std::optional(lane->i) : std::nullopt;
}

/// Whether `e` is the float constant with exactly these bits (so -0.0 != 0.0).
bool isFloatConstant(const ExprPtr &e, double value) {
  if (!isFloatingPoint(e->type().dtype))
    return false;
  auto lane = constantLane(e);
  return lane && std::bit_cast<uint64_t>(lane->f) == std::bit_cast<uint64_t>(value);
}

ExprPtr makeConstant(Scalar value, Type type) {
  Type scalarType = type.withLanes(1);
  ExprPtr c = isFloatingPoint(type.dtype) ? floatImm(value.f, scalarType)
                                          : intImm(wrapInteger(value.i, type.dtype), scalarType);
  return broadcast(std::move(c), type.lanes);
}

ExprPtr intConstantOf(int64_t value, Type type) { return makeConstant(Scalar::ofInt(value), type); }
ExprPtr boolConstant(bool value, int lanes) {
  return makeConstant(Scalar::ofInt(value ? 1 : 0), Type{DType::Bool, lanes});
}

Type resultType(BinaryOp op, const Type &operand) {
  return isComparison(op) ? Type{DType::Bool, operand.lanes} : operand;
}

bool isCommutative(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
  case BinaryOp::Mul:
  case BinaryOp::Min:
  case BinaryOp::Max:
  case BinaryOp::Eq:
  case BinaryOp::Ne:
  case BinaryOp::And:
  case BinaryOp::Or: return true;
  default: return false;
  }
}

/// a op b == b mirrored(op) a, for the ordered comparisons.
std::optional<BinaryOp> mirrored(BinaryOp op) {
  switch (op) {
  case BinaryOp::Lt: return BinaryOp::Gt;
  case BinaryOp::Le: return BinaryOp::Ge;
  case BinaryOp::Gt: return BinaryOp::Lt;
  case BinaryOp::Ge: return BinaryOp::Le;
  default: return std::nullopt;
  }
}

/// !(a op b) == a negated(op) b; `ordered` allows Lt <-> Ge, which NaN breaks.
std::optional<BinaryOp> negated(BinaryOp op, bool ordered) {
  switch (op) {
  case BinaryOp::Eq: return BinaryOp::Ne;
  case BinaryOp::Ne: return BinaryOp::Eq;
  case BinaryOp::Lt: return ordered ? std::optional(BinaryOp::Ge) : std::nullopt;
  case BinaryOp::Le: return ordered ? std::optional(BinaryOp::Gt) : std::nullopt;
  case BinaryOp::Gt: return ordered ? std::optional(BinaryOp::Le) : std::nullopt;
  case BinaryOp::Ge: return ordered ? std::optional(BinaryOp::Lt) : std::nullopt;
  default: return std::nullopt;
  }
}

/// x + c and x - c as (x, +-c); anything else as (e, 0).
std::pair<ExprPtr, int64_t> splitOffset(const ExprPtr &e) {
  if (auto node = as<Binary>(*e)) {
    if (auto c = intConstant(node->rhs)) {
      if (node->op == BinaryOp::Add)
        return {node->lhs, *c};
      if (node->op == BinaryOp::Sub)
        return {node->lhs, static_cast<int64_t>(0 - static_cast<uint64_t>(*c))};
    }
  }
  return {e, 0};
}

int64_t wrappedAdd(int64_t a, int64_t b, DType dtype) {
  return wrapInteger(static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)),
                     dtype);
}

int64_t wrappedMul(int64_t a, int64_t b, DType dtype) {
  return wrapInteger(static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)),
                     dtype);
}

/// One term of a linear form: base * multiplier (base nullptr: a constant).
struct Term {
  ExprPtr base;
  int64_t multiplier;
};

/// Flattens `e * scale` into terms through +, - constant and * constant;
/// false when a multiplier would overflow.
bool flattenLinear(const ExprPtr &e, int64_t scale, std::vector<Term> &terms, int64_t &constant) {
  if (auto c = intConstant(e)) {
    int64_t product;
    if (__builtin_mul_overflow(*c, scale, &product) ||
        __builtin_add_overflow(constant, product, &constant))
      return false;
    return true;
  }
  if (auto node = as<Binary>(*e)) {
    if (node->op == BinaryOp::Add)
      return flattenLinear(node->lhs, scale, terms, constant) &&
             flattenLinear(node->rhs, scale, terms, constant);
    if (node->op == BinaryOp::Sub && intConstant(node->rhs)) {
      int64_t negScale;
      if (__builtin_mul_overflow(scale, -1, &negScale))
        return false;
      return flattenLinear(node->lhs, scale, terms, constant) &&
             flattenLinear(node->rhs, negScale, terms, constant);
    }
    if (node->op == BinaryOp::Mul) {
      if (auto c = intConstant(node->rhs)) {
        int64_t inner;
        if (__builtin_mul_overflow(scale, *c, &inner))
          return false;
        return flattenLinear(node->lhs, inner, terms, constant);
      }
    }
  }
  terms.push_back({e, scale});
  return true;
}

class Simplifier : public Mutator {
public:
  ExprPtr mutateUnary(const std::shared_ptr<const Unary> &node) override {
    ExprPtr operand = mutate(node->operand);
    if (ExprPtr r = unaryRules(node->op, operand))
      return r;
    return operand == node->operand ? node : rebuildUnary(*node, operand);
  }

  ExprPtr mutateBinary(const std::shared_ptr<const Binary> &node) override {
    ExprPtr a = mutate(node->lhs);
    ExprPtr b = mutate(node->rhs);
    if (ExprPtr r = binaryRules(node->op, a, b))
      return r;
    if (a == node->lhs && b == node->rhs)
      return node;
    return rebuildBinary(*node, std::move(a), std::move(b));
  }

  ExprPtr mutateSelect(const std::shared_ptr<const Select> &node) override {
    ExprPtr cond = mutate(node->cond);
    ExprPtr onTrue = mutate(node->onTrue);
    ExprPtr onFalse = mutate(node->onFalse);
    if (auto c = intConstant(cond))
      return *c ? onTrue : onFalse;
    if (exprEqual(onTrue, onFalse))
      return onTrue;
    if (cond == node->cond && onTrue == node->onTrue && onFalse == node->onFalse)
      return node;
    return rebuildSelect(std::move(cond), std::move(onTrue), std::move(onFalse));
  }

  ExprPtr mutateCast(const std::shared_ptr<const Cast> &node) override {
    ExprPtr value = mutate(node->value);
    DType from = value->type().dtype, to = node->type().dtype;
    if (from == to)
      return value;
    // A narrow-float constant is not an expression kernel IR allows, so casts
    // to f16/bf16/f8 stay casts.
    if (auto c = constantLane(value); c && !isNarrowFloat(to))
      return makeConstant(castLane(*c, from, to), node->type());
    return value == node->value ? node : rebuildCast(*node, std::move(value));
  }

  ExprPtr mutateLoad(const std::shared_ptr<const Load> &node) override {
    ExprPtr index = mutate(node->index);
    ExprPtr predicate = mutate(node->predicate);
    if (predicate) {
      if (auto c = intConstant(predicate)) {
        if (*c)
          return rebuildLoad(*node, std::move(index), nullptr);
        return zeroOf(node->type());
      }
    }
    if (index == node->index && predicate == node->predicate)
      return node;
    return rebuildLoad(*node, std::move(index), std::move(predicate));
  }

  ExprPtr mutateCall(const std::shared_ptr<const Call> &node) override {
    ExprPtr result = Mutator::mutateCall(node);
    auto call = as<Call>(*result);
    if (!call)
      return result;
    DType dtype = call->type().dtype;
    // Only correctly rounded functions fold: exp or tanh from the host libm
    // may differ in the last bit from what the backend's math library computes.
    bool exact = call->fn == Intrinsic::Sqrt || call->fn == Intrinsic::Abs ||
                 call->fn == Intrinsic::Floor || call->fn == Intrinsic::Fma;
    if (!exact || isNarrowFloat(dtype))
      return result;
    std::vector<Scalar> lanes;
    for (const auto &arg : call->args) {
      auto c = constantLane(arg);
      if (!c)
        return result;
      lanes.push_back(*c);
    }
    auto folded = evaluateIntrinsicLane(call->fn, dtype, lanes);
    return folded ? makeConstant(*folded, call->type()) : result;
  }

  StmtPtr mutateBlock(const std::shared_ptr<const Block> &node) override {
    std::vector<StmtPtr> stmts;
    bool changed = false;
    for (const auto &stmt : node->stmts) {
      StmtPtr result = mutate(stmt);
      changed |= result != stmt;
      if (isEmptyStmt(result)) {
        changed = true;
        continue;
      }
      // Blocks carry no scope (lets and allocations scope their own bodies),
      // so a nested block is spliced into its parent.
      if (auto inner = as<Block>(*result)) {
        stmts.insert(stmts.end(), inner->stmts.begin(), inner->stmts.end());
        changed = true;
        continue;
      }
      stmts.push_back(std::move(result));
    }
    if (stmts.empty())
      return nullptr;
    if (stmts.size() == 1)
      return stmts.front();
    if (!changed)
      return node;
    return std::make_shared<Block>(std::move(stmts));
  }

  StmtPtr mutateFor(const std::shared_ptr<const For> &node) override {
    ExprPtr begin = mutate(node->begin);
    ExprPtr extent = mutate(node->extent);
    auto extentBounds = integerBounds(extent, ranges_);
    if (extentBounds && extentBounds->max <= 0)
      return nullptr;
    // A GPU-bound loop of extent 1 still defines the launch shape: keep it.
    if (!isLaunchLoop(node->loopKind) && intConstant(extent) == 1) {
      if (constantLane(begin) || begin->kind() == ExprKind::VarRef)
        return mutate(substitute(node->body, node->var.get(), begin));
      return mutate(let(node->var, begin, node->body));
    }
    std::optional<Interval> range;
    auto beginBounds = integerBounds(begin, ranges_);
    int64_t last;
    if (beginBounds && extentBounds && extentBounds->max >= 1 &&
        !__builtin_add_overflow(beginBounds->max, extentBounds->max - 1, &last))
      range = Interval{beginBounds->min, last};
    StmtPtr body = withRange(node->var.get(), range, [&] { return mutate(node->body); });
    if (isEmptyStmt(body))
      return nullptr;
    if (begin == node->begin && extent == node->extent && body == node->body)
      return node;
    return std::make_shared<For>(node->var, std::move(begin), std::move(extent), node->loopKind,
                                 std::move(body));
  }

  StmtPtr mutateLet(const std::shared_ptr<const Let> &node) override {
    ExprPtr value = mutate(node->value);
    if (constantLane(value) || value->kind() == ExprKind::VarRef)
      return mutate(substitute(node->body, node->var.get(), value));
    if (!usesVar(node->body, node->var.get()))
      return mutate(node->body);
    StmtPtr body = withRange(node->var.get(), integerBounds(value, ranges_),
                             [&] { return mutate(node->body); });
    if (isEmptyStmt(body))
      return nullptr;
    if (!usesVar(body, node->var.get()))
      return body;
    if (value == node->value && body == node->body)
      return node;
    return std::make_shared<Let>(node->var, std::move(value), std::move(body));
  }

  StmtPtr mutateIf(const std::shared_ptr<const If> &node) override {
    ExprPtr cond = mutate(node->cond);
    if (auto c = intConstant(cond))
      return mutate(*c ? node->thenBody : node->elseBody);
    StmtPtr thenBody = mutate(node->thenBody);
    StmtPtr elseBody = mutate(node->elseBody);
    bool thenEmpty = isEmptyStmt(thenBody), elseEmpty = isEmptyStmt(elseBody);
    if (thenEmpty && elseEmpty)
      return nullptr;
    if (thenEmpty)
      return std::make_shared<If>(notOf(cond), std::move(elseBody));
    if (elseEmpty)
      elseBody = nullptr;
    if (cond == node->cond && thenBody == node->thenBody && elseBody == node->elseBody)
      return node;
    return std::make_shared<If>(std::move(cond), std::move(thenBody), std::move(elseBody));
  }

  StmtPtr mutateAllocate(const std::shared_ptr<const Allocate> &node) override {
    StmtPtr body = mutate(node->body);
    if (isEmptyStmt(body))
      return nullptr;
    if (body == node->body)
      return node;
    return std::make_shared<Allocate>(node->buffer, std::move(body));
  }

  StmtPtr mutateStore(const std::shared_ptr<const Store> &node) override {
    StmtPtr result = Mutator::mutateStore(node);
    auto store = static_cast<const Store *>(result.get());
    if (!store->predicate)
      return result;
    auto c = intConstant(store->predicate);
    if (!c)
      return result;
    if (!*c)
      return nullptr;
    return std::make_shared<Store>(store->buffer, store->index, store->value, nullptr);
  }

private:
  VarRanges ranges_;

  std::optional<Interval> bounds(const ExprPtr &e) { return integerBounds(e, ranges_); }

  template <typename F> StmtPtr withRange(const Var *var, std::optional<Interval> range, F body) {
    std::optional<Interval> saved;
    if (auto it = ranges_.find(var); it != ranges_.end())
      saved = it->second;
    if (range)
      ranges_[var] = *range;
    else
      ranges_.erase(var);
    StmtPtr result = body();
    if (saved)
      ranges_[var] = *saved;
    else
      ranges_.erase(var);
    return result;
  }

  ExprPtr zeroOf(const Type &type) {
    if (isNarrowFloat(type.dtype))
      return std::make_shared<Cast>(makeConstant(Scalar{}, Type{DType::F32, type.lanes}), type);
    return makeConstant(Scalar{}, type);
  }

  ExprPtr notOf(const ExprPtr &cond) {
    if (ExprPtr r = unaryRules(UnaryOp::Not, cond))
      return r;
    return std::make_shared<Unary>(UnaryOp::Not, cond);
  }

  /// A binary node after applying every rule (children already simplified).
  ExprPtr make(BinaryOp op, const ExprPtr &a, const ExprPtr &b) {
    if (ExprPtr r = binaryRules(op, a, b))
      return r;
    return std::make_shared<Binary>(op, a, b, resultType(op, a->type()));
  }

  /// x + c with c folded into a subtraction when negative (i + -1 reads worse than i - 1).
  ExprPtr addConstant(const ExprPtr &x, int64_t c) {
    if (c == 0)
      return x;
    if (c < 0 && c != kMinI64 && wrapInteger(-c, x->type().dtype) == -c)
      return make(BinaryOp::Sub, x, intConstantOf(-c, x->type()));
    return make(BinaryOp::Add, x, intConstantOf(c, x->type()));
  }

  ExprPtr unaryRules(UnaryOp op, const ExprPtr &operand) {
    DType dtype = operand->type().dtype;
    if (auto c = constantLane(operand); c && !isNarrowFloat(dtype))
      if (auto folded = evaluateUnaryLane(op, dtype, *c))
        return makeConstant(*folded, operand->type());
    if (auto inner = as<Unary>(*operand); inner && inner->op == op)
      return inner->operand; // --x and !!x (negation is exact, integers wrap both ways)
    if (op == UnaryOp::Not) {
      if (auto cmp = as<Binary>(*operand)) {
        bool ordered = !isFloatingPoint(cmp->lhs->type().dtype);
        if (auto inverse = negated(cmp->op, ordered))
          return make(*inverse, cmp->lhs, cmp->rhs);
      }
    }
    return nullptr;
  }

  /// The simplified form of a op b, or nullptr when no rule applies.
  ExprPtr binaryRules(BinaryOp op, const ExprPtr &a, const ExprPtr &b) {
    DType dtype = a->type().dtype;
    if (!isNarrowFloat(dtype)) {
      auto ca = constantLane(a), cb = constantLane(b);
      if (ca && cb)
        if (auto folded = evaluateBinaryLane(op, dtype, *ca, *cb))
          return makeConstant(*folded, resultType(op, a->type()));
    }
    if (isFloatingPoint(dtype))
      return floatRules(op, a, b);
    if (dtype == DType::Bool)
      return boolRules(op, a, b);
    return integerRules(op, a, b);
  }

  /// Only identities that hold bit for bit for every input, NaN and -0 included.
  ExprPtr floatRules(BinaryOp op, const ExprPtr &a, const ExprPtr &b) {
    switch (op) {
    case BinaryOp::Mul:
      if (isFloatConstant(b, 1.0))
        return a;
      if (isFloatConstant(a, 1.0))
        return b;
      return nullptr;
    case BinaryOp::Div: return isFloatConstant(b, 1.0) ? a : nullptr;
    case BinaryOp::Sub: return isFloatConstant(b, 0.0) ? a : nullptr; // x - +0 == x, even for -0
    case BinaryOp::Add:
      if (isFloatConstant(b, -0.0)) // x + -0 == x, even for -0 (x + +0 is not: -0 + 0 == +0)
        return a;
      if (isFloatConstant(a, -0.0))
        return b;
      return nullptr;
    default: return nullptr;
    }
  }

  ExprPtr boolRules(BinaryOp op, const ExprPtr &a, const ExprPtr &b) {
    auto ca = intConstant(a), cb = intConstant(b);
    if (ca && !cb && isCommutative(op))
      return make(op, b, a);
    int lanes = a->type().lanes;
    switch (op) {
    case BinaryOp::And:
    case BinaryOp::Min:
      if (cb)
        return *cb ? a : boolConstant(false, lanes);
      return exprEqual(a, b) ? a : nullptr;
    case BinaryOp::Or:
    case BinaryOp::Max:
      if (cb)
        return *cb ? boolConstant(true, lanes) : a;
      return exprEqual(a, b) ? a : nullptr;
    case BinaryOp::Eq:
      if (cb)
        return *cb ? a : notOf(a);
      return nullptr;
    case BinaryOp::Ne:
      if (cb)
        return *cb ? notOf(a) : a;
      return nullptr;
    default: return nullptr;
    }
  }

  ExprPtr integerRules(BinaryOp op, const ExprPtr &a, const ExprPtr &b) {
    const Type &type = a->type();
    DType dtype = type.dtype;
    auto ca = intConstant(a), cb = intConstant(b);
    // Constants go right, so the rules below look for them in one place.
    if (ca && !cb) {
      if (isCommutative(op))
        return make(op, b, a);
      if (auto flipped = mirrored(op))
        return make(*flipped, b, a);
    }
    switch (op) {
    case BinaryOp::Add: {
      if (cb == 0)
        return a;
      if (cb) {
        auto [base, offset] = splitOffset(a);
        if (offset != 0)
          return addConstant(base, wrappedAdd(offset, *cb, dtype));
        if (*cb < 0)
          return addConstant(a, *cb);
        return nullptr;
      }
      // Offsets move outward, where they meet and fold: (x + 1) + y -> (x + y) + 1.
      if (auto [base, offset] = splitOffset(a); offset != 0)
        return addConstant(make(BinaryOp::Add, base, b), offset);
      if (auto [base, offset] = splitOffset(b); offset != 0)
        return addConstant(make(BinaryOp::Add, a, base), offset);
      return nullptr;
    }
    case BinaryOp::Sub: {
      if (cb == 0)
        return a;
      if (exprEqual(a, b))
        return intConstantOf(0, type);
      if (cb) {
        int64_t negative = wrapInteger(static_cast<int64_t>(0 - static_cast<uint64_t>(*cb)), dtype);
        auto [base, offset] = splitOffset(a);
        if (offset != 0)
          return addConstant(base, wrappedAdd(offset, negative, dtype));
        if (*cb < 0)
          return addConstant(a, negative);
        return nullptr;
      }
      if (auto [base, offset] = splitOffset(a); offset != 0)
        return addConstant(make(BinaryOp::Sub, base, b), offset);
      if (auto [base, offset] = splitOffset(b); offset != 0)
        return addConstant(make(BinaryOp::Sub, a, base),
                           static_cast<int64_t>(0 - static_cast<uint64_t>(offset)));
      return nullptr;
    }
    case BinaryOp::Mul:
      if (cb == 1)
        return a;
      if (cb == 0)
        return intConstantOf(0, type);
      if (cb) {
        if (auto inner = as<Binary>(*a); inner && inner->op == BinaryOp::Mul)
          if (auto c1 = intConstant(inner->rhs))
            return make(BinaryOp::Mul, inner->lhs,
                        intConstantOf(wrappedMul(*c1, *cb, dtype), type));
        // Offsets move outward through a scale too: (x + 8) * 64 -> x * 64 + 512. Two
        // addresses that differ by a constant then share their base, so a backend sees one
        // base and constant offsets (and can pair the stores: row i and row i + 8 of an
        // accumulator fragment).
        if (auto [base, offset] = splitOffset(a); offset != 0)
          return addConstant(make(BinaryOp::Mul, base, b), wrappedMul(offset, *cb, dtype));
      }
      return nullptr;
    case BinaryOp::Div:
    case BinaryOp::Mod: return divModRules(op, a, cb);
    case BinaryOp::Min:
    case BinaryOp::Max: {
      if (exprEqual(a, b))
        return a;
      auto ba = bounds(a), bb = bounds(b);
      if (!ba || !bb)
        return nullptr;
      bool aBelow = ba->max <= bb->min, bBelow = bb->max <= ba->min;
      if (op == BinaryOp::Min)
        return aBelow ? a : bBelow ? b : nullptr;
      return aBelow ? b : bBelow ? a : nullptr;
    }
    case BinaryOp::Eq:
    case BinaryOp::Ne:
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge: {
      std::optional<bool> known = compareKnown(op, a, b);
      return known ? boolConstant(*known, type.lanes) : nullptr;
    }
    default: return nullptr;
    }
  }

  /// The truth of an integer comparison when the operands' ranges decide it.
  std::optional<bool> compareKnown(BinaryOp op, const ExprPtr &a, const ExprPtr &b) {
    if (exprEqual(a, b))
      return op == BinaryOp::Eq || op == BinaryOp::Le || op == BinaryOp::Ge;
    auto ba = bounds(a), bb = bounds(b);
    if (!ba || !bb)
      return std::nullopt;
    bool less = ba->max < bb->min, lessEqual = ba->max <= bb->min;
    bool greater = ba->min > bb->max, greaterEqual = ba->min >= bb->max;
    switch (op) {
    case BinaryOp::Lt:
      return less ? std::optional(true) : greaterEqual ? std::optional(false) : std::nullopt;
    case BinaryOp::Le:
      return lessEqual ? std::optional(true) : greater ? std::optional(false) : std::nullopt;
    case BinaryOp::Gt:
      return greater ? std::optional(true) : lessEqual ? std::optional(false) : std::nullopt;
    case BinaryOp::Ge:
      return greaterEqual ? std::optional(true) : less ? std::optional(false) : std::nullopt;
    case BinaryOp::Eq: return less || greater ? std::optional(false) : std::nullopt;
    case BinaryOp::Ne: return less || greater ? std::optional(true) : std::nullopt;
    default: return std::nullopt;
    }
  }

  ExprPtr divModRules(BinaryOp op, const ExprPtr &a, std::optional<int64_t> cb) {
    const Type &type = a->type();
    if (cb == 1)
      return op == BinaryOp::Div ? a : intConstantOf(0, type);
    // Integer division is total: x / 0 = 0, x / -1 = -x, x % 0 = x % -1 = 0.
    if (cb == 0 || (cb == -1 && op == BinaryOp::Mod))
      return intConstantOf(0, type);
    if (cb == -1) {
      ExprPtr negated = unaryRules(UnaryOp::Neg, a);
      return negated ? negated : std::make_shared<Unary>(UnaryOp::Neg, a);
    }
    if (!cb || *cb <= 0)
      return nullptr;
    int64_t c = *cb;
    // (x / c1) / c2 == x / (c1 * c2) for truncating division and positive divisors.
    if (op == BinaryOp::Div)
      if (auto inner = as<Binary>(*a); inner && inner->op == BinaryOp::Div)
        if (auto c1 = intConstant(inner->rhs); c1 && *c1 > 0) {
          int64_t product;
          if (!__builtin_mul_overflow(*c1, c, &product) &&
              wrapInteger(product, type.dtype) == product)
            return make(BinaryOp::Div, inner->lhs, intConstantOf(product, type));
        }
    if (type != Type::index())
      return nullptr;
    auto numerator = bounds(a);
    if (!numerator || numerator->min < 0)
      return nullptr;
    if (numerator->max < c)
      return op == BinaryOp::Div ? intConstantOf(0, type) : a;
    return splitDivMod(op, a, c);
  }

  /// For n = q * c + r with n >= 0 and r >= 0 (q, r linear forms, terms of q
  /// multiples of c): n / c == q + r / c and n % c == r % c. Truncating and
  /// flooring division agree on non-negative numbers, so this is exact.
  ExprPtr splitDivMod(BinaryOp op, const ExprPtr &n, int64_t c) {
    std::vector<Term> terms;
    int64_t constant = 0;
    if (!flattenLinear(n, 1, terms, constant))
      return nullptr;
    int64_t constantQuotient = constant / c - (constant % c < 0 ? 1 : 0); // floor
    int64_t constantRemainder = constant - constantQuotient * c;
    ExprPtr quotient, remainder;
    auto append = [this](ExprPtr &sum, ExprPtr term) {
      sum = sum ? make(BinaryOp::Add, sum, term) : term;
    };
    auto scaled = [this](const Term &term, int64_t multiplier) {
      return make(BinaryOp::Mul, term.base, index(multiplier));
    };
    for (const Term &term : terms) {
      if (term.multiplier % c == 0)
        append(quotient, scaled(term, term.multiplier / c));
      else
        append(remainder, scaled(term, term.multiplier));
    }
    if (!quotient && constantQuotient == 0)
      return nullptr; // nothing divides: the split would only reorder terms
    remainder = remainder ? addConstant(remainder, constantRemainder) : index(constantRemainder);
    auto remainderBounds = bounds(remainder);
    if (!remainderBounds || remainderBounds->min < 0)
      return nullptr;
    ExprPtr result;
    if (op == BinaryOp::Mod) {
      result = make(BinaryOp::Mod, remainder, index(c));
    } else {
      result = quotient ? addConstant(quotient, constantQuotient) : index(constantQuotient);
      result = make(BinaryOp::Add, result, make(BinaryOp::Div, remainder, index(c)));
    }
    // Every intermediate of the rewritten form must be free of wrapping too.
    return bounds(result) ? result : nullptr;
  }
};

} // namespace

ExprPtr simplifyExpr(const ExprPtr &expr) {
  ExprPtr current = expr;
  for (int round = 0; round < kMaxSimplifyRounds; ++round) {
    ExprPtr next = Simplifier().mutate(current);
    if (next == current)
      break;
    current = std::move(next);
  }
  return current;
}

StmtPtr simplifyStmt(const StmtPtr &stmt) {
  StmtPtr current = stmt ? stmt : emptyStmt();
  for (int round = 0; round < kMaxSimplifyRounds; ++round) {
    StmtPtr next = Simplifier().mutate(current);
    if (!next)
      next = isEmptyStmt(current) ? current : emptyStmt();
    if (next == current)
      break;
    current = std::move(next);
  }
  return current;
}

Kernel simplifyKernel(Kernel kernel) {
  kernel.body = simplifyStmt(kernel.body);
  return kernel;
}

} // namespace kiln::kir
