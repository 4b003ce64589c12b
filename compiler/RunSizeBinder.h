// The size symbols' values of one run of a symbolic plan, from its inputs' shapes: what
// LaunchPlan::bindSizes does for the runtime (docs/dynamic-shapes.md).
#pragma once

#include "ir/graph/Specialize.h"

#include <optional>
#include <span>
#include <vector>

namespace kiln::compiler {

class RunSizeBinder {
public:
  /// `inputs` in the plan's input order; the values come back in `symbols`' order.
  RunSizeBinder(std::vector<ir::SymbolicLeaf> inputs, std::vector<ir::SizeSymbol> symbols);

  /// Each symbol's value, or ir::bindSymbols' error naming the input, dim and range at fault.
  Expected<std::vector<int64_t>> operator()(std::span<const std::vector<int64_t>> shapes) const;

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

} // namespace kiln::compiler
