// Integer interval analysis of kernel IR index math: the range an i64
// expression can take given the ranges of the variables in scope. Simplify
// uses it to prove the facts its div/mod and comparison rules need.
#pragma once

#include "ir/kernel/KernelIR.h"

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace kiln::kir {

/// A closed range [min, max] of mathematical integers.
struct Interval {
  int64_t min = 0;
  int64_t max = 0;

  static Interval point(int64_t v) { return {v, v}; }
  bool operator==(const Interval &) const = default;
};

/// Known ranges of variables (looked up only, never iterated).
using VarRanges = std::unordered_map<const Var *, Interval>;

/// The range of an i64 scalar expression, or nullopt when unknown. A range is
/// returned only when no subexpression can wrap, so the machine value of the
/// expression is its mathematical value and lies in the range.
std::optional<Interval> integerBounds(const ExprPtr &expr, const VarRanges &ranges);

} // namespace kiln::kir
