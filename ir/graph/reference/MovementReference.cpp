// Reference data movement: copies (reshape, squeeze, unsqueeze), transpose,
// broadcast_to, slice, concat, pad, gather, take_along_axis, iota and
// constant. Index ops report an out-of-range index as an Error naming the op,
// the index, the axis and its size.
#include "ir/graph/Reference.h"
#include "ir/graph/ShapeInference.h"
#include "ir/graph/reference/IndexMath.h"

#include <fmt/format.h>

namespace kiln::ir {
namespace {

using reference::StridedWalker;

/// Gathers `input` through a walker over the result: element i of the result
/// is input[offset] where the walker's offset is read before step i.
std::vector<double> gatherStrided(const RefTensor &input, const TensorType &result,
                                  std::vector<int64_t> strides, int64_t base = 0) {
  std::vector<double> out(static_cast<size_t>(result.numElements()));
  StridedWalker<1> walker(result.shape, {std::move(strides)}, {base});
  for (double &value : out) {
    value = input.data[static_cast<size_t>(walker.offset(0))];
    walker.next();
  }
  return out;
}

/// Resolves one index value (NumPy style: negative counts from the end) or
/// fails naming the op, the index, the axis and its size.
Expected<int64_t> resolveIndex(const ReferenceContext &context, double rawIndex, int64_t axis,
                               int64_t size) {
  auto outOfRange = [&](auto index) {
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{}: index {} is out of range for axis {} of size {} "
                                 "(data {}, indices {})",
                                 opName(context.kind), index, axis, size,
                                 context.operands[0]->type.str(), context.operands[1]->type.str()));
  };
  // An i64 index near 2^63 arrives as 2^63 exactly, which int64 cannot hold:
  // check the range in fp64 before converting.
  if (!(rawIndex >= -0x1p63 && rawIndex < 0x1p63))
    return outOfRange(rawIndex);
  auto index = static_cast<int64_t>(rawIndex);
  int64_t resolved = index < 0 ? index + size : index;
  if (resolved < 0 || resolved >= size)
    return outOfRange(index);
  return resolved;
}

} // namespace

Expected<std::vector<double>> referenceCopy(const ReferenceContext &context) {
  return context.operands[0]->data;
}

Expected<std::vector<double>> referenceTranspose(const ReferenceContext &context) {
  const RefTensor &x = *context.operands[0];
  const auto &perm = getInts(context.attrs, "perm");
  std::vector<int64_t> inStrides = rowMajorStrides(x.type.shape);
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    strides[i] = inStrides[static_cast<size_t>(perm[i])];
  return gatherStrided(x, context.resultType, std::move(strides));
}

Expected<std::vector<double>> referenceBroadcastTo(const ReferenceContext &context) {
  const RefTensor &x = *context.operands[0];
  return gatherStrided(x, context.resultType,
                       reference::broadcastStrides(x.type.shape, context.resultType.shape));
}

Expected<std::vector<double>> referenceSlice(const ReferenceContext &context) {
  const RefTensor &x = *context.operands[0];
  const auto &starts = getInts(context.attrs, "starts");
  const auto &stops = getInts(context.attrs, "stops");
  const auto &steps = getInts(context.attrs, "steps");
  std::vector<int64_t> inStrides = rowMajorStrides(x.type.shape);
  std::vector<int64_t> strides(inStrides.size());
  int64_t base = 0;
  for (size_t axis = 0; axis < inStrides.size(); ++axis) {
    int64_t size = x.type.shape[axis];
    int64_t count = sliceLength(size, starts[axis], stops[axis], steps[axis]);
    KILN_CHECK(count == context.resultType.shape[axis],
               fmt::format("slice: reference size {} disagrees with inferred {} on axis {}", count,
                           context.resultType.shape[axis], axis));
    // The first index taken, with Python's clamping: the elements from it to
    // the end of the axis number sliceLength(size, start, size, 1).
    int64_t first = size - sliceLength(size, starts[axis], size, 1);
    base += count > 0 ? first * inStrides[axis] : 0;
    strides[axis] = inStrides[axis] * steps[axis];
  }
  return gatherStrided(x, context.resultType, std::move(strides), base);
}

Expected<std::vector<double>> referenceConcat(const ReferenceContext &context) {
  const Shape &result = context.resultType.shape;
  int64_t axis = reference::wrapAxis(getInt(context.attrs, "axis"), context.resultType.rank());
  reference::AxisSplit split = reference::splitAround(result, axis);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(context.resultType.numElements()));
  for (int64_t outer = 0; outer < split.outer; ++outer) {
    for (const RefTensor *operand : context.operands) {
      int64_t chunk = operand->type.shape[static_cast<size_t>(axis)] * split.inner;
      auto begin = operand->data.begin() + outer * chunk;
      out.insert(out.end(), begin, begin + chunk);
    }
  }
  return out;
}

Expected<std::vector<double>> referencePad(const ReferenceContext &context) {
  const RefTensor &x = *context.operands[0];
  const auto &low = getInts(context.attrs, "low");
  const Shape &result = context.resultType.shape;
  std::vector<double> out(static_cast<size_t>(context.resultType.numElements()),
                          getFloat(context.attrs, "value"));
  std::vector<int64_t> outStrides = rowMajorStrides(result);
  int64_t base = 0;
  for (size_t axis = 0; axis < outStrides.size(); ++axis)
    base += low[axis] * outStrides[axis];
  // Scatter: walk the input, writing each element at its place in the result.
  StridedWalker<1> walker(x.type.shape, {outStrides}, {base});
  for (double value : x.data) {
    out[static_cast<size_t>(walker.offset(0))] = value;
    walker.next();
  }
  return out;
}

Expected<std::vector<double>> referenceGather(const ReferenceContext &context) {
  const RefTensor &data = *context.operands[0];
  const RefTensor &indices = *context.operands[1];
  int64_t axis = reference::wrapAxis(getInt(context.attrs, "axis"), data.type.rank());
  reference::AxisSplit split = reference::splitAround(data.type.shape, axis);
  std::vector<int64_t> resolved(indices.data.size());
  for (size_t t = 0; t < indices.data.size(); ++t) {
    KILN_TRY(resolved[t], resolveIndex(context, indices.data[t], axis, split.size));
  }
  std::vector<double> out;
  out.reserve(static_cast<size_t>(split.outer) * resolved.size() *
              static_cast<size_t>(split.inner));
  for (int64_t outer = 0; outer < split.outer; ++outer) {
    for (int64_t index : resolved) {
      auto begin = data.data.begin() + (outer * split.size + index) * split.inner;
      out.insert(out.end(), begin, begin + split.inner);
    }
  }
  return out;
}

Expected<std::vector<double>> referenceTakeAlongAxis(const ReferenceContext &context) {
  const RefTensor &data = *context.operands[0];
  const RefTensor &indices = *context.operands[1];
  int64_t axis = reference::wrapAxis(getInt(context.attrs, "axis"), data.type.rank());
  // indices match data on every other axis, so the data offset of result
  // element r is data's row-major offset of r's index with axis replaced.
  std::vector<int64_t> dataStrides = rowMajorStrides(data.type.shape);
  int64_t axisStride = dataStrides[static_cast<size_t>(axis)];
  int64_t size = data.type.shape[static_cast<size_t>(axis)];
  std::vector<int64_t> walkStrides = dataStrides;
  walkStrides[static_cast<size_t>(axis)] = 0;
  std::vector<double> out(indices.data.size());
  StridedWalker<1> walker(indices.type.shape, {std::move(walkStrides)});
  for (size_t r = 0; r < out.size(); ++r) {
    KILN_TRY(int64_t index, resolveIndex(context, indices.data[r], axis, size));
    out[r] = data.data[static_cast<size_t>(walker.offset(0) + index * axisStride)];
    walker.next();
  }
  return out;
}

Expected<std::vector<double>> referenceIota(const ReferenceContext &context) {
  const Shape &shape = context.resultType.shape;
  int64_t axis = reference::wrapAxis(getInt(context.attrs, "axis"), context.resultType.rank());
  reference::AxisSplit split = reference::splitAround(shape, axis);
  std::vector<double> out(static_cast<size_t>(context.resultType.numElements()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<double>((static_cast<int64_t>(i) / split.inner) % split.size);
  return out;
}

Expected<std::vector<double>> referenceConstant(const ReferenceContext &context) {
  const auto &values = getFloats(context.attrs, "value");
  size_t count = static_cast<size_t>(context.resultType.numElements());
  if (values.size() == 1)
    return std::vector<double>(count, values[0]);
  KILN_CHECK(values.size() == count, "constant: value count was not verified");
  return values;
}

// The reference runs a symbolic graph specialized (ir::specialize turns symbol_size into a
// constant), so what reaches here is a size without symbols.
Expected<std::vector<double>> referenceSymbolSize(const ReferenceContext &context) {
  const SizeExpr &size = getSizes(context.attrs, "size").front();
  if (!size.isConstant())
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("symbol_size: the size {} has no value; the reference runs a "
                                 "symbolic graph specialized at its inputs' sizes",
                                 size.str()));
  return std::vector<double>{static_cast<double>(size.constant())};
}

} // namespace kiln::ir
