// bindSymbols on leaves: a run's size symbols from its inputs' shapes. Part of kiln_rt (a
// loaded bundle binds its symbols with it), so it needs no graph.
#include "ir/graph/SymbolBinding.h"

#include <fmt/format.h>

namespace kiln::ir {

namespace {

// Where a symbol got its value, for the "inputs disagree" error.
struct Binding {
  int64_t value;
  std::string leaf;
  size_t dim;
};

std::string leafKind(const SymbolicLeaf &leaf) { return leaf.isParam ? "parameter" : "input"; }

Expected<void> checkRank(const SymbolicLeaf &leaf, const Shape &shape) {
  if (static_cast<int64_t>(shape.size()) == leaf.type.rank())
    return {};
  return makeError(ErrorCode::ShapeMismatch,
                   fmt::format("{} '{}' is {} (rank {}), got shape {}", leafKind(leaf), leaf.name,
                               leaf.type.str(), leaf.type.rank(), shapeStr(shape)));
}

/// The unique value of `symbol` in its range that makes `size` equal `actual`.
/// Sizes grow with their symbols, so a binary search finds the least one.
std::optional<int64_t> solveFor(const SizeExpr &size, const SizeSymbol &symbol, int64_t actual,
                                SymbolBindings bindings) {
  auto at = [&](int64_t value) -> std::optional<int64_t> {
    bindings[symbol.name] = value;
    auto result = size.evaluate(bindings);
    return result ? std::optional<int64_t>(*result) : std::nullopt;
  };
  int64_t low = symbol.min, high = symbol.max;
  while (low < high) {
    int64_t mid = low + (high - low) / 2;
    auto value = at(mid);
    if (!value)
      return std::nullopt;
    if (*value < actual)
      low = mid + 1;
    else
      high = mid;
  }
  if (at(low) != actual || (low < symbol.max && at(low + 1) == actual))
    return std::nullopt; // no solution, or not a unique one
  return low;
}

} // namespace

Expected<SymbolBindings> bindSymbols(std::span<const SymbolicLeaf> leaves,
                                     const LeafShapes &shapes) {
  std::map<std::string, Binding, std::less<>> bound;
  // First the dims that are a bare symbol: they bind it.
  for (const SymbolicLeaf &leaf : leaves) {
    auto found = shapes.find(leaf.name);
    if (found == shapes.end() || !leaf.type.isSymbolic())
      continue;
    KILN_TRY_VOID(checkRank(leaf, found->second));
    for (size_t dim = 0; dim < found->second.size(); ++dim) {
      std::optional<SizeSymbol> symbol = leaf.type.symbolicDims[dim].asSymbol();
      if (!symbol)
        continue;
      int64_t actual = found->second[dim];
      if (actual < symbol->min || actual > symbol->max)
        return makeError(ErrorCode::ShapeMismatch,
                         fmt::format("{} '{}' dim {} is the size symbol {}, but the actual size "
                                     "{} is outside its range",
                                     leafKind(leaf), leaf.name, dim, symbol->str(), actual));
      auto [it, inserted] = bound.emplace(symbol->name, Binding{actual, leaf.name, dim});
      if (!inserted && it->second.value != actual)
        return makeError(ErrorCode::ShapeMismatch,
                         fmt::format("the inputs disagree on {}: '{}' dim {} gives {} = {}, '{}' "
                                     "dim {} gives {} = {}",
                                     symbol->name, it->second.leaf, it->second.dim, symbol->name,
                                     it->second.value, leaf.name, dim, symbol->name, actual));
    }
  }
  SymbolBindings bindings;
  for (const auto &[name, binding] : bound)
    bindings.emplace(name, binding.value);
  // Then every other dim: static sizes and expressions must match.
  for (const SymbolicLeaf &leaf : leaves) {
    auto found = shapes.find(leaf.name);
    if (found == shapes.end())
      continue;
    KILN_TRY_VOID(checkRank(leaf, found->second));
    for (size_t dim = 0; dim < found->second.size(); ++dim) {
      SizeExpr size = leaf.type.size(static_cast<int64_t>(dim));
      int64_t actual = found->second[dim];
      std::vector<SizeSymbol> unbound;
      for (const SizeSymbol &symbol : size.symbols())
        if (!bindings.contains(symbol.name))
          unbound.push_back(symbol);
      if (unbound.size() == 1) {
        std::optional<int64_t> value = solveFor(size, unbound[0], actual, bindings);
        if (!value)
          return makeError(ErrorCode::ShapeMismatch,
                           fmt::format("{} '{}' dim {} is {}: no single value of {} gives the "
                                       "actual size {}",
                                       leafKind(leaf), leaf.name, dim, size.str(), unbound[0].str(),
                                       actual));
        bindings.emplace(unbound[0].name, *value);
        continue;
      }
      if (unbound.size() > 1)
        continue; // perhaps bound by a later dim; specialize names any left unbound
      KILN_TRY(int64_t expected, size.evaluate(bindings));
      if (expected != actual)
        return makeError(ErrorCode::ShapeMismatch,
                         fmt::format("{} '{}' dim {} is {}{}, got {}", leafKind(leaf), leaf.name,
                                     dim, size.str(),
                                     size.isConstant() ? "" : fmt::format(" = {} here", expected),
                                     actual));
    }
  }
  return bindings;
}

} // namespace kiln::ir
