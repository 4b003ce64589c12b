// Reference reductions: reduce_{sum,mean,max,min,prod} over a set of axes
// (keepdims only changes the shape, not the row-major order), and
// argmax/argmin along one axis returning the first extreme index.
#include "ir/graph/Reference.h"
#include "ir/graph/reference/IndexMath.h"
#include "ir/graph/reference/IntegerArithmetic.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace kiln::ir {
namespace {

using reference::StridedWalker;

/// For each input axis, the stride of the matching result element when the
/// reduced axes are dropped (0 on reduced axes), so walking the input in
/// row-major order yields each element's result offset.
std::vector<int64_t> resultStridesOverInput(const Shape &input, const std::vector<bool> &reduced) {
  std::vector<int64_t> strides(input.size(), 0);
  int64_t stride = 1;
  for (size_t axis = input.size(); axis-- > 0;) {
    if (reduced[axis])
      continue;
    strides[axis] = stride;
    stride *= input[axis];
  }
  return strides;
}

/// Calls `f(resultOffset, value)` for every input element in row-major order.
template <typename F>
void forEachElement(const RefTensor &x, const std::vector<bool> &reduced, F f) {
  const Shape &shape = x.type.shape;
  StridedWalker<1> walker(shape, {resultStridesOverInput(shape, reduced)});
  for (double value : x.data) {
    f(static_cast<size_t>(walker.offset(0)), value);
    walker.next();
  }
}

// Neumaier-compensated sums, so the oracle's float sums are accurate to about
// one fp64 rounding however many elements a reduction has.
std::vector<double> sumFloat(const RefTensor &x, const std::vector<bool> &reduced,
                             size_t resultSize) {
  std::vector<double> sum(resultSize, 0.0);
  std::vector<double> compensation(resultSize, 0.0);
  forEachElement(x, reduced, [&](size_t out, double value) {
    double total = sum[out] + value;
    if (std::fabs(sum[out]) >= std::fabs(value))
      compensation[out] += (sum[out] - total) + value;
    else
      compensation[out] += (value - total) + sum[out];
    sum[out] = total;
  });
  for (size_t i = 0; i < resultSize; ++i)
    if (std::isfinite(sum[i]))
      sum[i] += compensation[i];
  return sum;
}

template <typename Combine>
std::vector<double> foldInteger(const RefTensor &x, const std::vector<bool> &reduced,
                                size_t resultSize, DType dtype, uint64_t init, Combine combine) {
  std::vector<uint64_t> accumulators(resultSize, init);
  forEachElement(x, reduced, [&](size_t out, double value) {
    accumulators[out] = combine(accumulators[out], reference::toWrapping(value));
  });
  std::vector<double> result(resultSize);
  for (size_t i = 0; i < resultSize; ++i)
    result[i] = reference::fromWrapping(accumulators[i], dtype);
  return result;
}

std::vector<double> extremum(const RefTensor &x, const std::vector<bool> &reduced,
                             size_t resultSize, bool findMax) {
  double init =
      findMax ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  std::vector<double> result(resultSize, init);
  forEachElement(x, reduced, [&](size_t out, double value) {
    double &best = result[out];
    if (std::isnan(best))
      return;
    if (std::isnan(value) || (findMax ? value > best : value < best))
      best = value;
  });
  return result;
}

} // namespace

Expected<std::vector<double>> referenceReduce(const ReferenceContext &context) {
  const RefTensor &x = *context.operands[0];
  int64_t rank = x.type.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  int64_t count = 1;
  for (int64_t axis : getInts(context.attrs, "axes")) {
    size_t a = static_cast<size_t>(reference::wrapAxis(axis, rank));
    reduced[a] = true;
    count *= x.type.shape[a];
  }
  size_t resultSize = static_cast<size_t>(context.resultType.numElements());
  bool integer = isInteger(context.resultType.dtype);

  switch (context.kind) {
  case OpKind::ReduceSum:
    if (integer)
      return foldInteger(x, reduced, resultSize, context.resultType.dtype, 0,
                         [](uint64_t a, uint64_t b) { return a + b; });
    return sumFloat(x, reduced, resultSize);
  case OpKind::ReduceMean: {
    std::vector<double> sum = sumFloat(x, reduced, resultSize);
    for (double &value : sum)
      value /= static_cast<double>(count);
    return sum;
  }
  case OpKind::ReduceProd:
    if (integer)
      return foldInteger(x, reduced, resultSize, context.resultType.dtype, 1,
                         [](uint64_t a, uint64_t b) { return a * b; });
    {
      std::vector<double> product(resultSize, 1.0);
      forEachElement(x, reduced, [&](size_t out, double value) { product[out] *= value; });
      return product;
    }
  case OpKind::ReduceMax: return extremum(x, reduced, resultSize, /*findMax=*/true);
  case OpKind::ReduceMin: return extremum(x, reduced, resultSize, /*findMax=*/false);
  default: break;
  }
  KILN_UNREACHABLE(fmt::format("{}: no reduction reference", opName(context.kind)));
}

Expected<std::vector<double>> referenceArgReduce(const ReferenceContext &context) {
  const RefTensor &x = *context.operands[0];
  int64_t axis = reference::wrapAxis(getInt(context.attrs, "axis"), x.type.rank());
  reference::AxisSplit split = reference::splitAround(x.type.shape, axis);
  bool findMax = context.kind == OpKind::ArgMax;
  std::vector<double> result(static_cast<size_t>(split.outer * split.inner), 0.0);
  for (int64_t outer = 0; outer < split.outer; ++outer) {
    for (int64_t inner = 0; inner < split.inner; ++inner) {
      const double *row = x.data.data() + outer * split.size * split.inner + inner;
      int64_t bestIndex = 0;
      // As in NumPy, a NaN counts as the extreme: the first NaN wins.
      for (int64_t i = 1; i < split.size && !std::isnan(row[bestIndex * split.inner]); ++i) {
        double value = row[i * split.inner];
        double best = row[bestIndex * split.inner];
        if (std::isnan(value) || (findMax ? value > best : value < best))
          bestIndex = i;
      }
      result[static_cast<size_t>(outer * split.inner + inner)] = static_cast<double>(bestIndex);
    }
  }
  return result;
}

} // namespace kiln::ir
