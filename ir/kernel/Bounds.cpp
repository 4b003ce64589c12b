// Interval arithmetic over i64 kernel IR expressions, with every step checked
// for overflow (a range that could wrap is reported as unknown).
#include "ir/kernel/Bounds.h"

#include <algorithm>
#include <limits>

namespace kiln::kir {

namespace {

using Bounds = std::optional<Interval>;

std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::nullopt : std::optional(r);
}
std::optional<int64_t> checkedSub(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_sub_overflow(a, b, &r) ? std::nullopt : std::optional(r);
}
std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional(r);
}

Bounds add(Interval a, Interval b) {
  auto lo = checkedAdd(a.min, b.min), hi = checkedAdd(a.max, b.max);
  if (!lo || !hi)
    return std::nullopt;
  return Interval{*lo, *hi};
}

Bounds sub(Interval a, Interval b) {
  auto lo = checkedSub(a.min, b.max), hi = checkedSub(a.max, b.min);
  if (!lo || !hi)
    return std::nullopt;
  return Interval{*lo, *hi};
}

Bounds mul(Interval a, Interval b) {
  int64_t corners[4];
  int64_t *out = corners;
  for (int64_t x : {a.min, a.max})
    for (int64_t y : {b.min, b.max}) {
      auto p = checkedMul(x, y);
      if (!p)
        return std::nullopt;
      *out++ = *p;
    }
  return Interval{*std::min_element(corners, corners + 4), *std::max_element(corners, corners + 4)};
}

/// Truncating division by a constant: monotone in the numerator (x / 0 = 0).
Bounds divByConstant(Interval a, int64_t c) {
  if (c == 0)
    return Interval::point(0);
  if (c == -1 && a.min == std::numeric_limits<int64_t>::min())
    return std::nullopt;
  int64_t x = a.min / c, y = a.max / c;
  return Interval{std::min(x, y), std::max(x, y)};
}

/// Truncating remainder by a constant: the sign of the numerator, below |c|
/// (x % 0 = 0).
Bounds modByConstant(Interval a, int64_t c) {
  if (c == 0)
    return Interval::point(0);
  if (c == std::numeric_limits<int64_t>::min())
    return std::nullopt;
  int64_t limit = (c < 0 ? -c : c) - 1;
  if (a.min >= 0 && a.max <= limit)
    return a;
  return Interval{a.min < 0 ? -limit : 0, a.max > 0 ? std::min(a.max, limit) : 0};
}

Bounds typeRange(DType dtype) {
  switch (dtype) {
  case DType::Bool: return Interval{0, 1};
  case DType::I8:
    return Interval{std::numeric_limits<int8_t>::min(), std::numeric_limits<int8_t>::max()};
  case DType::I32:
    return Interval{std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  default: return std::nullopt;
  }
}

} // namespace

std::optional<Interval> integerBounds(const ExprPtr &expr, const VarRanges &ranges) {
  if (!expr || expr->type() != Type::index())
    return std::nullopt;
  switch (expr->kind()) {
  case ExprKind::IntImm: return Interval::point(static_cast<const IntImm &>(*expr).value);
  case ExprKind::VarRef: {
    auto it = ranges.find(static_cast<const VarRef &>(*expr).var.get());
    return it == ranges.end() ? std::nullopt : Bounds(it->second);
  }
  case ExprKind::Unary: {
    auto &node = static_cast<const Unary &>(*expr);
    if (node.op != UnaryOp::Neg)
      return std::nullopt;
    Bounds a = integerBounds(node.operand, ranges);
    if (!a)
      return std::nullopt;
    return sub(Interval::point(0), *a);
  }
  case ExprKind::Binary: {
    auto &node = static_cast<const Binary &>(*expr);
    Bounds a = integerBounds(node.lhs, ranges);
    if (!a)
      return std::nullopt;
    // Division and modulo need only the divisor's value, and only when constant.
    if (node.op == BinaryOp::Div || node.op == BinaryOp::Mod) {
      auto divisor = as<IntImm>(*node.rhs);
      if (!divisor)
        return std::nullopt;
      return node.op == BinaryOp::Div ? divByConstant(*a, divisor->value)
                                      : modByConstant(*a, divisor->value);
    }
    Bounds b = integerBounds(node.rhs, ranges);
    if (!b)
      return std::nullopt;
    switch (node.op) {
    case BinaryOp::Add: return add(*a, *b);
    case BinaryOp::Sub: return sub(*a, *b);
    case BinaryOp::Mul: return mul(*a, *b);
    case BinaryOp::Min: return Interval{std::min(a->min, b->min), std::min(a->max, b->max)};
    case BinaryOp::Max: return Interval{std::max(a->min, b->min), std::max(a->max, b->max)};
    default: return std::nullopt;
    }
  }
  case ExprKind::Select: {
    auto &node = static_cast<const Select &>(*expr);
    Bounds a = integerBounds(node.onTrue, ranges), b = integerBounds(node.onFalse, ranges);
    if (!a || !b)
      return std::nullopt;
    return Interval{std::min(a->min, b->min), std::max(a->max, b->max)};
  }
  case ExprKind::Cast: {
    auto &node = static_cast<const Cast &>(*expr);
    if (node.value->type().isVector())
      return std::nullopt;
    return typeRange(node.value->type().dtype);
  }
  default: return std::nullopt;
  }
}

} // namespace kiln::kir
