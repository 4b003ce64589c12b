// bindSymbols and specialize: a symbolic graph at concrete sizes.
#include "ir/graph/Specialize.h"

#include "ir/graph/Verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

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

Expected<SymbolBindings> bindSymbols(const Graph &graph, const LeafShapes &shapes) {
  std::vector<SymbolicLeaf> leaves;
  for (const Value *input : graph.inputs())
    leaves.push_back({input->name(), false, input->type()});
  for (const Value *param : graph.params())
    leaves.push_back({param->name(), true, param->type()});
  return bindSymbols(leaves, shapes);
}

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

namespace {

/// A size with each symbol replaced by what `replace` gives for it.
using SizeRewrite = std::function<Expected<SizeExpr>(const SizeExpr &)>;

/// SizeRewrite for a symbol-by-symbol substitution (a value, or the same symbol with
/// another range). Checked arithmetic: a narrower range cannot overflow where the
/// original did not, and a value in range cannot either.
SizeRewrite substitute(std::function<SizeExpr(const SizeSymbol &)> replace) {
  return [replace = std::move(replace)](const SizeExpr &size) -> Expected<SizeExpr> {
    std::optional<Error> failed;
    auto check = [&](Expected<SizeExpr> result) {
      if (!result) {
        failed = result.error();
        return SizeExpr();
      }
      return *result;
    };
    SizeExpr result = size.rebuild(SizeExpr::Algebra<SizeExpr>{
        .symbol = replace,
        .constant = [](int64_t value) { return SizeExpr(value); },
        .add = [&](SizeExpr a, SizeExpr b) { return check(add(a, b)); },
        .multiply = [&](SizeExpr a, SizeExpr b) { return check(multiply(a, b)); },
        .floorDiv = [&](SizeExpr a, int64_t divisor) { return check(floorDiv(a, divisor)); },
    });
    if (failed)
      return std::unexpected(*failed);
    return result;
  };
}

Expected<TensorType> rewriteType(const TensorType &type, const SizeRewrite &rewrite) {
  if (!type.isSymbolic())
    return type;
  std::vector<SizeExpr> sizes;
  for (const SizeExpr &size : type.symbolicDims) {
    KILN_TRY(SizeExpr rewritten, rewrite(size));
    sizes.push_back(std::move(rewritten));
  }
  return makeTensorType(type.dtype, std::move(sizes));
}

/// A verified copy of `graph` that declares `symbols` and has every size rewritten by
/// `rewrite`. A reshape or broadcast_to target keeps `sizes` while they are symbolic, with
/// `shape` at their upper bounds, and becomes a plain `shape` when they are all static.
Expected<std::unique_ptr<Graph>> copyWithSizes(const Graph &graph,
                                               const std::vector<SizeSymbol> &symbols,
                                               const SizeRewrite &rewrite) {
  auto copy = std::make_unique<Graph>(graph.name());
  for (const SizeSymbol &symbol : symbols)
    KILN_TRY_VOID(copy->declareSymbol(symbol));
  std::unordered_map<const Value *, Value *> mapped;
  for (Value *input : graph.inputs()) {
    KILN_TRY(TensorType type, rewriteType(input->type(), rewrite));
    KILN_TRY(mapped[input], copy->addInput(input->name(), std::move(type)));
  }
  for (Value *param : graph.params()) {
    KILN_TRY(TensorType type, rewriteType(param->type(), rewrite));
    KILN_TRY(mapped[param], copy->addParam(param->name(), std::move(type)));
  }
  for (Node *node : graph.topologicalOrder()) {
    std::vector<Value *> operands;
    for (Value *operand : node->operands())
      operands.push_back(mapped.at(operand));
    AttrMap attrs = node->attrs();
    if (auto sizes = attrs.find("sizes"); sizes != attrs.end()) {
      std::vector<SizeExpr> rewritten;
      std::vector<int64_t> shape;
      bool symbolic = false;
      for (const SizeExpr &size : std::get<std::vector<SizeExpr>>(sizes->second)) {
        KILN_TRY(SizeExpr result, rewrite(size));
        symbolic = symbolic || !result.isConstant();
        shape.push_back(result.upperBound());
        rewritten.push_back(std::move(result));
      }
      if (symbolic)
        sizes->second = Attr(std::move(rewritten));
      else
        attrs.erase(sizes);
      attrs.insert_or_assign("shape", Attr(std::move(shape)));
    }
    OpKind kind = node->kind();
    if (kind == OpKind::SymbolSize) {
      // A size that lost its symbols is a constant: what the reference and every
      // static pass expect of a specialized graph.
      KILN_TRY(SizeExpr size, rewrite(getSizes(attrs, "size").front()));
      if (size.isConstant()) {
        kind = OpKind::Constant;
        attrs = {{"dtype", getType(attrs, "dtype")},
                 {"shape", Attr(std::vector<int64_t>{})},
                 {"value", Attr(std::vector<double>{static_cast<double>(size.constant())})}};
      } else {
        attrs.insert_or_assign("size", Attr(std::vector<SizeExpr>{std::move(size)}));
      }
    }
    KILN_TRY(mapped[node->result()],
             copy->addNode(kind, std::move(operands), std::move(attrs), node->location()));
  }
  for (const GraphOutput &output : graph.outputs())
    KILN_TRY_VOID(copy->addOutput(output.name, mapped.at(output.value)));
  KILN_TRY_VOID(verifyGraph(*copy));
  return copy;
}

} // namespace

Expected<std::unique_ptr<Graph>> specialize(const Graph &graph, const SymbolBindings &bindings) {
  for (const SizeSymbol &symbol : graph.symbols()) {
    auto found = bindings.find(symbol.name);
    if (found == bindings.end())
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("specialize @{}: no value for the size symbol {}", graph.name(),
                                   symbol.str()));
    if (found->second < symbol.min || found->second > symbol.max)
      return makeError(ErrorCode::ShapeMismatch,
                       fmt::format("specialize @{}: {} = {} is outside its range {}", graph.name(),
                                   symbol.name, found->second, symbol.str()));
  }
  return copyWithSizes(graph, {}, substitute([&](const SizeSymbol &symbol) {
                         return SizeExpr(bindings.find(symbol.name)->second);
                       }));
}

Expected<std::unique_ptr<Graph>> narrowSymbols(const Graph &graph,
                                               std::span<const SizeSymbol> ranges) {
  std::vector<SizeSymbol> symbols = graph.symbols();
  for (const SizeSymbol &range : ranges) {
    auto declared = std::ranges::find(symbols, range.name, &SizeSymbol::name);
    if (declared == symbols.end())
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("narrow @{}: the graph declares no size symbol {}", graph.name(),
                                   range.name));
    if (range.min < declared->min || range.max > declared->max || range.min > range.max)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("narrow @{}: {} is not a range within {}", graph.name(),
                                   range.str(), declared->str()));
    *declared = range;
  }
  return copyWithSizes(graph, symbols, substitute([&](const SizeSymbol &symbol) {
                         return SizeExpr::symbol(
                             *std::ranges::find(symbols, symbol.name, &SizeSymbol::name));
                       }));
}

Expected<void> requireStaticSizes(const Graph &graph, std::string_view consumer) {
  if (!graph.isSymbolic())
    return {};
  std::string symbols;
  for (const SizeSymbol &symbol : graph.symbols())
    symbols += (symbols.empty() ? "" : ", ") + symbol.str();
  return makeError(ErrorCode::Unsupported,
                   fmt::format("graph @{} has symbolic dims ({}): the {} takes static sizes; "
                               "specialize the graph at the sizes to run (ir::specialize); "
                               "kernels with runtime sizes run on the CPU target so far "
                               "(docs/dynamic-shapes.md)",
                               graph.name(), symbols, consumer));
}

} // namespace kiln::ir
