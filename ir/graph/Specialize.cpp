// bindSymbols and specialize: a symbolic graph at concrete sizes.
#include "ir/graph/Specialize.h"

#include "ir/graph/Verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace kiln::ir {

Expected<SymbolBindings> bindSymbols(const Graph &graph, const LeafShapes &shapes) {
  std::vector<SymbolicLeaf> leaves;
  for (const Value *input : graph.inputs())
    leaves.push_back({input->name(), false, input->type()});
  for (const Value *param : graph.params())
    leaves.push_back({param->name(), true, param->type()});
  return bindSymbols(leaves, shapes);
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

namespace {

/// `graph` with its symbols named in `ranges` taking those ranges, each checked against the
/// declared one by `fits` (`verb` names the change in errors).
Expected<std::unique_ptr<Graph>> withRanges(const Graph &graph, std::span<const SizeSymbol> ranges,
                                            std::string_view verb, std::string_view relation,
                                            bool (*fits)(const SizeSymbol &, const SizeSymbol &)) {
  std::vector<SizeSymbol> symbols = graph.symbols();
  for (const SizeSymbol &range : ranges) {
    auto declared = std::ranges::find(symbols, range.name, &SizeSymbol::name);
    if (declared == symbols.end())
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("{} @{}: the graph declares no size symbol {}", verb,
                                   graph.name(), range.name));
    if (range.min > range.max || !fits(range, *declared))
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("{} @{}: {} is not a range {} {}", verb, graph.name(),
                                   range.str(), relation, declared->str()));
    *declared = range;
  }
  return copyWithSizes(graph, symbols, substitute([&](const SizeSymbol &symbol) {
                         return SizeExpr::symbol(
                             *std::ranges::find(symbols, symbol.name, &SizeSymbol::name));
                       }));
}

} // namespace

Expected<std::unique_ptr<Graph>> narrowSymbols(const Graph &graph,
                                               std::span<const SizeSymbol> ranges) {
  return withRanges(graph, ranges, "narrow", "within",
                    [](const SizeSymbol &range, const SizeSymbol &declared) {
                      return range.min >= declared.min && range.max <= declared.max;
                    });
}

Expected<std::unique_ptr<Graph>> widenSymbols(const Graph &graph,
                                              std::span<const SizeSymbol> ranges) {
  return withRanges(graph, ranges, "widen", "around",
                    [](const SizeSymbol &range, const SizeSymbol &declared) {
                      return range.min <= declared.min && range.max >= declared.max;
                    });
}

Expected<void> requireStaticParams(const Graph &graph) {
  for (const Value *param : graph.params())
    if (param->type().isSymbolic())
      return makeError(ErrorCode::Unsupported,
                       fmt::format("parameter '{}' is {}: parameters take static sizes (a run "
                                   "binds the size symbols from its inputs)",
                                   param->name(), param->type().str()));
  return {};
}

} // namespace kiln::ir
