// Runtime sizes in kernels: symbol values loaded from the `sizes` parameter (RuntimeSizes.h).
#include "passes/lower/RuntimeSizes.h"

#include "ir/kernel/Builder.h"
#include "passes/lower/LowerUtil.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kiln::lower {

namespace {

/// Every value a group touches: its inputs and each node's result.
template <typename F> void forEachValue(const passes::FusionGroup &group, F &&f) {
  for (const ir::Value *input : group.inputs)
    f(input);
  for (const ir::Node *node : group.nodes)
    f(node->result());
}

std::string symbolList(const passes::FusionGroup &group) {
  std::map<std::string, ir::SizeSymbol> symbols;
  forEachValue(group, [&](const ir::Value *value) {
    for (const ir::SizeExpr &size : value->type().symbolicDims)
      for (const ir::SizeSymbol &symbol : size.symbols())
        symbols.emplace(symbol.name, symbol);
  });
  std::vector<std::string> names;
  for (const auto &[name, symbol] : symbols)
    names.push_back(symbol.str());
  return fmt::format("{}", fmt::join(names, ", "));
}

} // namespace

bool hasSymbolicSizes(const passes::FusionGroup &group) {
  bool symbolic = false;
  forEachValue(group, [&](const ir::Value *value) { symbolic |= value->type().isSymbolic(); });
  return symbolic;
}

Expected<void> requireLeadingSymbols(const passes::FusionGroup &group) {
  std::optional<Error> error;
  forEachValue(group, [&](const ir::Value *value) {
    const auto &dims = value->type().symbolicDims;
    for (size_t axis = 1; axis < dims.size() && !error; ++axis)
      if (!dims[axis].isConstant())
        error = unsupportedNode(group.anchor ? *group.anchor : *group.root,
                                fmt::format("{} ({}) has the symbolic size {} in axis {}: kernels "
                                            "take runtime sizes in the leading axis only so far "
                                            "(docs/dynamic-shapes.md)",
                                            value->name(), value->type().str(), dims[axis].str(),
                                            axis));
  });
  if (error)
    return std::unexpected(std::move(*error));
  return {};
}

Expected<void> requireStaticGroup(const passes::FusionGroup &group, std::string_view what) {
  if (!hasSymbolicSizes(group))
    return {};
  return std::unexpected(unsupportedNode(
      group.anchor ? *group.anchor : *group.root,
      fmt::format("{} takes static sizes only so far, and group {} has symbolic sizes ({}); "
                  "specialize the graph (ir::specialize) to compile it (docs/dynamic-shapes.md)",
                  what, group.id, symbolList(group))));
}

RuntimeSizes::RuntimeSizes(const ir::Graph &graph) : graph_(graph) {}

kir::ExprPtr RuntimeSizes::operator()(const ir::SizeExpr &size) {
  if (size.isConstant())
    return kir::index(size.constant());
  ir::SizeExpr::Algebra<kir::ExprPtr> algebra{
      .symbol =
          [this](const ir::SizeSymbol &symbol) {
            auto [it, added] = vars_.try_emplace(symbol.name);
            if (added)
              it->second = kir::makeVar("size_" + symbol.name, kir::Type::index());
            return kir::ref(it->second);
          },
      .constant = [](int64_t value) { return kir::index(value); },
      .add = [](kir::ExprPtr a, kir::ExprPtr b) { return kir::add(std::move(a), std::move(b)); },
      .multiply = [](kir::ExprPtr a,
                     kir::ExprPtr b) { return kir::mul(std::move(a), std::move(b)); },
      // Sizes are never negative, so the truncating division is the floor.
      .floorDiv = [](kir::ExprPtr a,
                     int64_t divisor) { return kir::div(std::move(a), kir::index(divisor)); },
  };
  return size.rebuild(algebra);
}

kir::ExprPtr RuntimeSizes::dim(const ir::Value *value, int64_t axis) {
  return (*this)(value->type().size(axis));
}

kir::ExprPtr RuntimeSizes::withLeadingAxis(const ir::Value *value, int64_t count) {
  const ir::TensorType &type = value->type();
  if (type.rank() == 0 || type.size(0).isConstant())
    return kir::index(count);
  int64_t largest = type.shape[0];
  KILN_CHECK(largest > 0 && count % largest == 0,
             fmt::format("a count of {} does not span the leading axis of {}", count, type.str()));
  return kir::mul(dim(value, 0), kir::index(count / largest));
}

void RuntimeSizes::bind(LoweredKernel &lowered) const {
  if (vars_.empty())
    return;
  kir::BufferPtr sizes =
      kir::makeBuffer("sizes", DType::I64, static_cast<int64_t>(graph_.symbols().size()));
  auto wrap = [&](kir::Kernel &kernel) {
    kernel.params.push_back(sizes);
    for (const auto &[name, var] : vars_) {
      const auto &symbols = graph_.symbols();
      auto found = std::find_if(symbols.begin(), symbols.end(),
                                [&](const ir::SizeSymbol &s) { return s.name == name; });
      KILN_CHECK(found != symbols.end(), fmt::format("size symbol {} is not declared", name));
      kernel.body =
          kir::let(var, kir::load(sizes, kir::index(found - symbols.begin())), kernel.body);
    }
  };
  wrap(lowered.kernel);
  for (kir::Kernel &followUp : lowered.followUps)
    wrap(followUp);
  if (lowered.prelude)
    wrap(*lowered.prelude);
  lowered.readsSizes = true;
}

} // namespace kiln::lower
