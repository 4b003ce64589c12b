#include "runtime/SizeBucketRules.h"

#include "ir/graph/TensorType.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kiln::runtime {
namespace {

/// Every size of `buffer`: its sizes, or its static shape.
std::vector<ir::SizeExpr> sizesOf(const PlanBuffer &buffer) {
  if (!buffer.sizes.empty())
    return buffer.sizes;
  return std::vector<ir::SizeExpr>(buffer.shape.begin(), buffer.shape.end());
}

} // namespace

Expected<void> checkSizeBucket(const LaunchPlan &model, std::span<const int64_t> upperBounds,
                               const LaunchPlan &bucket) {
  auto refuse = [&](std::string_view why) {
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("size bucket [{}]: {}", fmt::join(upperBounds, ", "), why));
  };
  if (upperBounds.size() != model.symbols.size() || model.symbols.empty())
    return refuse(fmt::format("the model has {} size symbols", model.symbols.size()));
  bool oneSize = true;
  ir::SymbolBindings leastValues;
  for (size_t i = 0; i < upperBounds.size(); ++i) {
    const ir::SizeSymbol &symbol = model.symbols[i];
    if (upperBounds[i] < symbol.min || upperBounds[i] > symbol.max)
      return refuse(fmt::format("the bound {} is outside {}", upperBounds[i], symbol.str()));
    oneSize = oneSize && upperBounds[i] == symbol.min;
    leastValues.emplace(symbol.name, symbol.min);
  }
  if (bucket.symbols.empty() ? !oneSize : bucket.symbols.size() != model.symbols.size())
    return refuse("the bucket's model has other size symbols");
  for (size_t i = 0; i < bucket.symbols.size(); ++i) {
    ir::SizeSymbol narrowed{model.symbols[i].name, model.symbols[i].min, upperBounds[i]};
    if (bucket.symbols[i] != narrowed)
      return refuse(fmt::format("the bucket's size symbol {} is not {}", bucket.symbols[i].str(),
                                narrowed.str()));
  }

  // The bucket runs on what the model checked and gathered, in the model's order.
  auto sameTypes = [&](const std::vector<PlanBinding> &ours, const std::vector<PlanBinding> &its,
                       const char *what) -> Expected<void> {
    if (!std::ranges::equal(ours, its, {}, &PlanBinding::name, &PlanBinding::name))
      return refuse(fmt::format("the bucket's model has other {}", what));
    for (size_t i = 0; i < ours.size(); ++i) {
      const PlanBuffer &a = model.buffers[static_cast<size_t>(ours[i].buffer)];
      const PlanBuffer &b = bucket.buffers[static_cast<size_t>(its[i].buffer)];
      std::vector<ir::SizeExpr> expected = sizesOf(a);
      if (bucket.symbols.empty())
        for (ir::SizeExpr &size : expected) {
          Expected<int64_t> value = size.evaluate(leastValues);
          if (!value)
            return std::unexpected(value.error());
          size = *value;
        }
      if (a.dtype != b.dtype || expected != sizesOf(b))
        return refuse(fmt::format("'{}' is {}{} in the bucket, not {}{}", ours[i].name,
                                  dtypeName(b.dtype), ir::sizesStr(sizesOf(b)), dtypeName(a.dtype),
                                  ir::sizesStr(expected)));
    }
    return {};
  };
  KILN_TRY_VOID(sameTypes(model.inputs, bucket.inputs, "inputs"));
  KILN_TRY_VOID(sameTypes(model.outputs, bucket.outputs, "outputs"));
  KILN_TRY_VOID(sameTypes(model.params, bucket.params, "parameters"));
  return {};
}

} // namespace kiln::runtime
