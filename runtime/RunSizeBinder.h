// A symbolic plan's sizes in one run: the symbols' values from the inputs' shapes, and a
// buffer's shape at those values (docs/dynamic-shapes.md). Everything comes from the plan, so
// a plan loaded from a bundle binds its sizes as a compiled one does.
#pragma once

#include "ir/graph/SymbolBinding.h"
#include "runtime/LaunchPlan.h"

#include <optional>
#include <span>
#include <vector>

namespace kiln::runtime {

class RunSizeBinder {
public:
  /// The binder of `plan`'s inputs (its symbols' values come back in plan.symbols' order).
  explicit RunSizeBinder(const LaunchPlan &plan);

  /// Each symbol's value, or ir::bindSymbols' error naming the input, dim and range at fault.
  /// `shapes` in the plan's input order.
  Expected<std::vector<int64_t>> operator()(std::span<const std::vector<int64_t>> shapes) const;

  /// An input dim that is a bare size symbol and whose actual size is outside the symbol's
  /// range: what a recompile for a wider range would fix.
  struct OutOfRange {
    std::string input;
    size_t dim = 0;
    ir::SizeSymbol symbol;
    int64_t size = 0;
  };
  /// Every such dim of `shapes` (empty when every bare symbol is in range).
  std::vector<OutOfRange> outOfRange(std::span<const std::vector<int64_t>> shapes) const;

private:
  /// Every run pays for the binding, so the common case (each symbolic dim a bare symbol, as
  /// a batch is) skips bindSymbols' maps: nullopt for anything else, valid or not.
  std::optional<std::vector<int64_t>> quickBind(std::span<const std::vector<int64_t>> shapes) const;

  /// A dim of an input: a static size, or (symbol >= 0) the bare symbol of that index.
  struct DimRule {
    int symbol = -1;
    int64_t size = 0;
  };
  std::vector<ir::SymbolicLeaf> inputs_;
  std::vector<ir::SizeSymbol> symbols_;
  /// Per input, per dim; empty when some dim is an expression (quickBind never applies).
  std::vector<std::vector<DimRule>> rules_;
};

/// `buffer`'s shape when `plan`'s symbols have `values` (its upper bounds when it has no sizes).
std::vector<int64_t> shapeAtSizes(const LaunchPlan &plan, const PlanBuffer &buffer,
                                  std::span<const int64_t> values);

} // namespace kiln::runtime
