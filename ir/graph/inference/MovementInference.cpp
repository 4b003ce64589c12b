// Shape inference for data movement: reshapes, permutations, broadcasts,
// slicing, joining, padding, gathers and the source ops (iota, constant).
#include "ir/graph/inference/InferenceUtil.h"

#include <algorithm>
#include <cmath>

namespace kiln::ir {

using namespace inference;

namespace {

Expected<void> requireIntegerIndices(const InferContext &context, size_t operandIndex) {
  DType type = operand(context, operandIndex).dtype;
  if (!isInteger(type))
    return fail(context, ErrorCode::TypeMismatch, "indices must be an integer dtype, got {}",
                dtypeName(type));
  return {};
}

Expected<void> requireNonNegativeShape(const InferContext &context, const Shape &shape) {
  for (int64_t size : shape)
    if (size < 0)
      return fail(context, ErrorCode::InvalidArgument, "shape {} has a negative dimension",
                  shapeStr(shape));
  return {};
}

Expected<int64_t> numElementsOf(const InferContext &context, const Shape &shape) {
  auto count = checkedNumElements(shape);
  if (!count)
    return fail(context, ErrorCode::InvalidArgument, "shape {} has more than 2^53 elements (zero-size dims aside)",
                shapeStr(shape));
  return *count;
}

// Python's slice bound rule for a positive step.
int64_t clampBound(int64_t bound, int64_t size) {
  if (bound < 0)
    bound += size;
  return std::clamp<int64_t>(bound, 0, size);
}

} // namespace

int64_t sliceLength(int64_t size, int64_t start, int64_t stop, int64_t step) {
  int64_t begin = clampBound(start, size), end = clampBound(stop, size);
  return end <= begin ? 0 : 1 + (end - begin - 1) / step;
}

namespace {

/// The product of sizes, overflow-checked.
Expected<SizeExpr> productOf(const InferContext &context, const std::vector<SizeExpr> &sizes) {
  SizeExpr product(1);
  for (const SizeExpr &size : sizes) {
    auto next = multiply(product, size);
    if (!next)
      return fail(context, ErrorCode::InvalidArgument, "{}", next.error().message());
    product = *next;
  }
  return product;
}

/// The result type of an op whose target shape is an attribute: the symbolic
/// `sizes` when present (`shape` must hold their upper bounds), else `shape`.
/// A symbolic operand needs symbolic sizes.
Expected<std::optional<TensorType>> symbolicTarget(const InferContext &context) {
  const TensorType &input = operand(context, 0);
  const Shape &shape = getInts(context.attrs, "shape");
  if (!context.attrs.contains("sizes")) {
    if (input.isSymbolic())
      return fail(context, ErrorCode::ShapeMismatch,
                  "the operand {} is symbolic: give the target as symbolic sizes (attribute "
                  "'sizes'), not the static shape {}",
                  input.str(), shapeStr(shape));
    return std::optional<TensorType>();
  }
  const std::vector<SizeExpr> &sizes = getSizes(context.attrs, "sizes");
  KILN_TRY(TensorType type, resultType(context, input.dtype, sizes));
  if (type.shape != shape)
    return fail(context, ErrorCode::InvalidArgument,
                "shape {} must hold the upper bounds {} of sizes {}", shapeStr(shape),
                shapeStr(type.shape), sizesStr(sizes));
  // Static sizes keep the type static, as a static graph writes it.
  return std::optional<TensorType>(std::move(type));
}


} // namespace

Expected<TensorType> inferReshape(const InferContext &context) {
  const TensorType &input = operand(context, 0);
  KILN_TRY(std::optional<TensorType> target, symbolicTarget(context));
  if (target) {
    KILN_TRY(SizeExpr from, productOf(context, input.sizes()));
    KILN_TRY(SizeExpr to, productOf(context, target->sizes()));
    if (from != to)
      return fail(context, ErrorCode::ShapeMismatch,
                  "cannot reshape {} ({} elements) to {} ({} elements)", input.str(), from.str(),
                  target->str(), to.str());
    return *target;
  }
  const Shape &shape = getInts(context.attrs, "shape");
  KILN_TRY_VOID(requireNonNegativeShape(context, shape));
  KILN_TRY(int64_t count, numElementsOf(context, shape));
  if (count != input.numElements())
    return fail(context, ErrorCode::ShapeMismatch,
                "cannot reshape {} ({} elements) to {} ({} elements)", input.str(),
                input.numElements(), shapeStr(shape), count);
  return TensorType{input.dtype, shape};
}

Expected<TensorType> inferTranspose(const InferContext &context) {
  const TensorType &input = operand(context, 0);
  const auto &perm = getInts(context.attrs, "perm");
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool isPermutation = static_cast<int64_t>(perm.size()) == input.rank();
  for (size_t i = 0; isPermutation && i < sorted.size(); ++i)
    isPermutation = sorted[i] == static_cast<int64_t>(i);
  if (!isPermutation)
    return fail(context, ErrorCode::InvalidArgument, "perm {} is not a permutation of rank {}",
                shapeStr(perm), input.rank());
  std::vector<SizeExpr> shape;
  for (int64_t axis : perm)
    shape.push_back(input.size(axis));
  return resultType(context, input.dtype, std::move(shape));
}

Expected<TensorType> inferBroadcastTo(const InferContext &context) {
  const TensorType &input = operand(context, 0);
  KILN_TRY(std::optional<TensorType> target, symbolicTarget(context));
  if (target) {
    auto broadcast = broadcastSizes(input.sizes(), target->sizes());
    if (!broadcast || *broadcast != target->sizes())
      return fail(context, ErrorCode::ShapeMismatch, "cannot broadcast {} to {}", input.str(),
                  target->str());
    return *target;
  }
  const Shape &shape = getInts(context.attrs, "shape");
  KILN_TRY_VOID(requireNonNegativeShape(context, shape));
  auto broadcast = broadcastShapes(input.shape, shape);
  if (!broadcast || *broadcast != shape)
    return fail(context, ErrorCode::ShapeMismatch, "cannot broadcast {} to {}", input.str(),
                shapeStr(shape));
  return TensorType{input.dtype, shape};
}

Expected<TensorType> inferSlice(const InferContext &context) {
  const TensorType &input = operand(context, 0);
  size_t rank = input.shape.size();
  for (const char *name : {"starts", "stops", "steps"})
    if (getInts(context.attrs, name).size() != rank)
      return fail(context, ErrorCode::InvalidArgument, "{} must have {} entries (one per axis), got {}",
                  name, rank, getInts(context.attrs, name).size());
  KILN_TRY_VOID(requireInts(context, "steps", rank, 1));
  const auto &starts = getInts(context.attrs, "starts");
  const auto &stops = getInts(context.attrs, "stops");
  const auto &steps = getInts(context.attrs, "steps");
  std::vector<SizeExpr> sizes;
  for (size_t i = 0; i < rank; ++i) {
    auto axis = static_cast<int64_t>(i);
    if (input.isSymbolic() && !input.size(axis).isConstant()) {
      // A symbolic axis is taken whole (from 0, by 1, to its largest size or past it): its
      // bounds would otherwise depend on the run's size.
      if (starts[i] != 0 || steps[i] != 1 || stops[i] < input.shape[i])
        return fail(context, ErrorCode::ShapeMismatch,
                    "axis {} of {} is the symbolic size {}: a slice takes it whole (start 0, "
                    "step 1, stop >= {}), got start {}, stop {}, step {}",
                    i, input.str(), input.size(axis).str(), input.shape[i], starts[i], stops[i],
                    steps[i]);
      sizes.push_back(input.size(axis));
      continue;
    }
    sizes.push_back(SizeExpr(sliceLength(input.shape[i], starts[i], stops[i], steps[i])));
  }
  return resultType(context, input.dtype, std::move(sizes));
}

Expected<TensorType> inferConcat(const InferContext &context) {
  KILN_TRY_VOID(requireSameDType(context));
  const TensorType &first = operand(context, 0);
  KILN_TRY(int64_t axis, axisAttr(context, "axis", first.rank()));
  std::vector<SizeExpr> shape = first.sizes();
  for (size_t i = 1; i < context.operands.size(); ++i) {
    const TensorType &next = operand(context, i);
    bool compatible = next.rank() == first.rank();
    for (int64_t d = 0; compatible && d < first.rank(); ++d)
      compatible = d == axis || next.size(d) == first.size(d);
    if (!compatible)
      return fail(context, ErrorCode::ShapeMismatch,
                  "operand {} {} does not match operand 0 {} outside axis {}", i, next.str(),
                  first.str(), axis);
    auto sum = add(shape[axis], next.size(axis));
    if (!sum || sum->upperBound() > kMaxElements * 2)
      return fail(context, ErrorCode::ShapeMismatch, "concatenated axis {} overflows", axis);
    shape[axis] = *sum;
  }
  return resultType(context, first.dtype, std::move(shape));
}

Expected<TensorType> inferPad(const InferContext &context) {
  const TensorType &input = operand(context, 0);
  KILN_TRY_VOID(requireInts(context, "low", input.shape.size(), 0));
  KILN_TRY_VOID(requireInts(context, "high", input.shape.size(), 0));
  std::vector<SizeExpr> shape = input.sizes();
  // Each term is at most 2^53 (requireInts, TensorType's cap), so the sum fits;
  // inferResultType rejects a result beyond the cap.
  for (size_t i = 0; i < shape.size(); ++i) {
    auto padded = add(shape[i], SizeExpr(getInts(context.attrs, "low")[i] +
                                         getInts(context.attrs, "high")[i]));
    KILN_CHECK(padded.has_value(), "pad sizes are capped at 2^53");
    shape[i] = *padded;
  }
  return resultType(context, input.dtype, std::move(shape));
}

Expected<TensorType> inferGather(const InferContext &context) {
  const TensorType &data = operand(context, 0);
  const TensorType &indices = operand(context, 1);
  KILN_TRY_VOID(requireIntegerIndices(context, 1));
  if (data.rank() == 0)
    return fail(context, ErrorCode::ShapeMismatch, "data must have rank >= 1, got {}", data.str());
  KILN_TRY(int64_t axis, axisAttr(context, "axis", data.rank()));
  if (data.shape[axis] == 0 && indices.numElements() != 0)
    return fail(context, ErrorCode::ShapeMismatch,
                "axis {} of data {} is empty, so no index in {} can be valid", axis, data.str(),
                indices.str());
  // Indices resolve against the gathered axis' size, which must be static; the other sizes
  // (a symbolic batch of indices, say) pass through.
  if (!data.size(axis).isConstant())
    return fail(context, ErrorCode::ShapeMismatch,
                "axis {} of data {} is the symbolic size {}: a gather reads along a static "
                "axis",
                axis, data.str(), data.size(axis).str());
  std::vector<SizeExpr> dataSizes = data.sizes(), indexSizes = indices.sizes();
  std::vector<SizeExpr> sizes(dataSizes.begin(), dataSizes.begin() + axis);
  sizes.insert(sizes.end(), indexSizes.begin(), indexSizes.end());
  sizes.insert(sizes.end(), dataSizes.begin() + axis + 1, dataSizes.end());
  return resultType(context, data.dtype, std::move(sizes));
}

Expected<TensorType> inferTakeAlongAxis(const InferContext &context) {
  const TensorType &data = operand(context, 0);
  const TensorType &indices = operand(context, 1);
  KILN_TRY_VOID(requireIntegerIndices(context, 1));
  if (data.rank() == 0 || indices.rank() != data.rank())
    return fail(context, ErrorCode::ShapeMismatch,
                "indices {} must have the rank of data {} (>= 1)", indices.str(), data.str());
  KILN_TRY(int64_t axis, axisAttr(context, "axis", data.rank()));
  if (data.shape[axis] == 0 && indices.numElements() != 0)
    return fail(context, ErrorCode::ShapeMismatch,
                "axis {} of data {} is empty, so no index in {} can be valid", axis, data.str(),
                indices.str());
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != axis && indices.shape[d] != data.shape[d])
      return fail(context, ErrorCode::ShapeMismatch,
                  "indices {} must match data {} on every axis but {}", indices.str(), data.str(),
                  axis);
  return TensorType{data.dtype, indices.shape};
}

Expected<TensorType> inferSqueeze(const InferContext &context) {
  const TensorType &input = operand(context, 0);
  KILN_TRY(auto axes, axesAttr(context, "axes", input.rank()));
  std::vector<SizeExpr> shape;
  for (int64_t d = 0; d < input.rank(); ++d) {
    bool removed = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (removed && input.size(d) != SizeExpr(1))
      return fail(context, ErrorCode::ShapeMismatch, "axis {} of {} has size {}, not 1", d,
                  input.str(), input.size(d).str());
    if (!removed)
      shape.push_back(input.size(d));
  }
  return resultType(context, input.dtype, std::move(shape));
}

Expected<TensorType> inferUnsqueeze(const InferContext &context) {
  const TensorType &input = operand(context, 0);
  int64_t rank = input.rank() + static_cast<int64_t>(getInts(context.attrs, "axes").size());
  auto axes = axesAttr(context, "axes", rank);
  if (!axes)
    return std::unexpected(Error(axes.error().code(),
                                 fmt::format("{} (axes are positions in the result: {} plus {} new axes)",
                                             axes.error().message(), input.str(),
                                             rank - input.rank())));
  std::vector<SizeExpr> shape;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(std::find(axes->begin(), axes->end(), d) != axes->end()
                        ? SizeExpr(1)
                        : input.size(static_cast<int64_t>(next++)));
  return resultType(context, input.dtype, std::move(shape));
}

Expected<TensorType> inferIota(const InferContext &context) {
  const Shape &shape = getInts(context.attrs, "shape");
  KILN_TRY_VOID(requireNonNegativeShape(context, shape));
  DType type = getType(context.attrs, "dtype");
  if (type == DType::Bool)
    return fail(context, ErrorCode::TypeMismatch, "dtype must be numeric, got bool");
  KILN_TRY(int64_t axis, axisAttr(context, "axis", static_cast<int64_t>(shape.size())));
  (void)axis;
  return TensorType{type, shape};
}

namespace {

/// An integer constant's values, truncated toward zero as stored, must fit
/// its dtype: storing 3e9 in an i32 would wrap to -1294967296 without a word
/// (a cast saturates; a literal out of range is refused).
Expected<void> checkIntegerLiterals(const InferContext &context, const std::vector<double> &values,
                                    DType dtype) {
  if (!isInteger(dtype))
    return {};
  double lowest = -9223372036854775808.0, highest = kMaxI64AsDouble;
  if (dtype == DType::I8)
    lowest = -128, highest = 127;
  else if (dtype == DType::I32)
    lowest = -2147483648.0, highest = 2147483647.0;
  for (size_t i = 0; i < values.size(); ++i) {
    double value = std::trunc(values[i]);
    if (std::isfinite(value) && value >= lowest && value <= highest)
      continue;
    return fail(context, ErrorCode::InvalidArgument,
                "value{} = {} is out of range for {} (integers {} to {})",
                values.size() == 1 ? std::string() : fmt::format("[{}]", i), values[i],
                dtypeName(dtype), static_cast<int64_t>(lowest),
                static_cast<int64_t>(highest));
  }
  return {};
}

} // namespace

Expected<TensorType> inferSymbolSize(const InferContext &context) {
  const std::vector<SizeExpr> &size = getSizes(context.attrs, "size");
  if (size.size() != 1)
    return fail(context, ErrorCode::InvalidArgument, "size must hold one size, got {}",
                sizesStr(size));
  DType dtype = getType(context.attrs, "dtype");
  if (dtype == DType::Bool)
    return fail(context, ErrorCode::TypeMismatch, "dtype must be numeric, got bool");
  return TensorType{dtype, {}};
}

Expected<TensorType> inferConstant(const InferContext &context) {
  const Shape &shape = getInts(context.attrs, "shape");
  KILN_TRY_VOID(requireNonNegativeShape(context, shape));
  KILN_TRY(int64_t elements, numElementsOf(context, shape));
  const std::vector<double> &values = getFloats(context.attrs, "value");
  size_t count = values.size();
  if (count != 1 && static_cast<int64_t>(count) != elements)
    return fail(context, ErrorCode::ShapeMismatch,
                "value has {} entries; shape {} needs 1 (a splat) or {}", count, shapeStr(shape),
                elements);
  DType dtype = getType(context.attrs, "dtype");
  KILN_TRY_VOID(checkIntegerLiterals(context, values, dtype));
  return TensorType{dtype, shape};
}

} // namespace kiln::ir
