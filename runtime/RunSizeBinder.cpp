#include "runtime/RunSizeBinder.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::runtime {

namespace {

std::vector<ir::SymbolicLeaf> inputLeaves(const LaunchPlan &plan) {
  std::vector<ir::SymbolicLeaf> leaves;
  for (const PlanBinding &input : plan.inputs) {
    const PlanBuffer &buffer = plan.buffers[static_cast<size_t>(input.buffer)];
    leaves.push_back({input.name, false, {buffer.dtype, buffer.shape, buffer.sizes}});
  }
  return leaves;
}

ir::SymbolBindings bindingsOf(std::span<const ir::SizeSymbol> symbols,
                              std::span<const int64_t> values) {
  ir::SymbolBindings bindings;
  for (size_t i = 0; i < symbols.size() && i < values.size(); ++i)
    bindings.emplace(symbols[i].name, values[i]);
  return bindings;
}

} // namespace

RunSizeBinder::RunSizeBinder(const LaunchPlan &plan)
    : inputs_(inputLeaves(plan)), symbols_(plan.symbols) {
  for (const ir::SymbolicLeaf &input : inputs_) {
    std::vector<DimRule> dims;
    for (int64_t d = 0; d < input.type.rank(); ++d) {
      ir::SizeExpr size = input.type.size(d);
      if (size.isConstant()) {
        dims.push_back({-1, size.constant()});
        continue;
      }
      std::optional<ir::SizeSymbol> symbol = size.asSymbol();
      auto found = symbol ? std::ranges::find(symbols_, symbol->name, &ir::SizeSymbol::name)
                          : symbols_.end();
      if (found == symbols_.end()) {
        rules_.clear();
        return;
      }
      dims.push_back({static_cast<int>(found - symbols_.begin()), 0});
    }
    rules_.push_back(std::move(dims));
  }
}

std::optional<std::vector<int64_t>>
RunSizeBinder::quickBind(std::span<const std::vector<int64_t>> shapes) const {
  if (rules_.size() != inputs_.size() || shapes.size() != inputs_.size())
    return std::nullopt;
  std::vector<int64_t> values(symbols_.size(), -1);
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (shapes[i].size() != rules_[i].size())
      return std::nullopt;
    for (size_t d = 0; d < rules_[i].size(); ++d) {
      const DimRule &rule = rules_[i][d];
      int64_t actual = shapes[i][d];
      if (rule.symbol < 0) {
        if (actual != rule.size)
          return std::nullopt;
        continue;
      }
      const ir::SizeSymbol &symbol = symbols_[static_cast<size_t>(rule.symbol)];
      int64_t &value = values[static_cast<size_t>(rule.symbol)];
      if (actual < symbol.min || actual > symbol.max || (value >= 0 && value != actual))
        return std::nullopt;
      value = actual;
    }
  }
  if (std::ranges::find(values, -1) != values.end())
    return std::nullopt;
  return values;
}

Expected<std::vector<int64_t>>
RunSizeBinder::operator()(std::span<const std::vector<int64_t>> shapes) const {
  if (std::optional<std::vector<int64_t>> values = quickBind(shapes))
    return std::move(*values);
  ir::LeafShapes byName;
  for (size_t i = 0; i < inputs_.size() && i < shapes.size(); ++i)
    byName.emplace(inputs_[i].name, shapes[i]);
  KILN_TRY(ir::SymbolBindings bindings, ir::bindSymbols(inputs_, byName));
  std::vector<int64_t> values;
  for (const ir::SizeSymbol &symbol : symbols_) {
    auto value = bindings.find(symbol.name);
    if (value == bindings.end())
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("no input's shape gives the size symbol {}", symbol.str()));
    values.push_back(value->second);
  }
  return values;
}

std::vector<RunSizeBinder::OutOfRange>
RunSizeBinder::outOfRange(std::span<const std::vector<int64_t>> shapes) const {
  std::vector<OutOfRange> found;
  for (size_t i = 0; i < inputs_.size() && i < shapes.size(); ++i) {
    const ir::TensorType &type = inputs_[i].type;
    if (!type.isSymbolic() || static_cast<int64_t>(shapes[i].size()) != type.rank())
      continue;
    for (size_t d = 0; d < shapes[i].size(); ++d) {
      std::optional<ir::SizeSymbol> symbol = type.symbolicDims[d].asSymbol();
      if (symbol && (shapes[i][d] < symbol->min || shapes[i][d] > symbol->max))
        found.push_back({inputs_[i].name, d, *symbol, shapes[i][d]});
    }
  }
  return found;
}

std::vector<int64_t> shapeAtSizes(const LaunchPlan &plan, const PlanBuffer &buffer,
                                  std::span<const int64_t> values) {
  if (buffer.sizes.empty())
    return buffer.shape;
  ir::SymbolBindings bindings = bindingsOf(plan.symbols, values);
  std::vector<int64_t> shape;
  for (const ir::SizeExpr &size : buffer.sizes) {
    Expected<int64_t> value = size.evaluate(bindings);
    KILN_CHECK(value.has_value(), "a bound plan's sizes evaluate");
    shape.push_back(*value);
  }
  return shape;
}

} // namespace kiln::runtime
