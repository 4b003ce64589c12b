// Converters of ONNX's data movement, shape and constant ops. kiln's shapes are static, so
// Shape and Size are values known at import, and the chains exporters build from them
// (Shape -> Gather -> Concat -> Reshape) fold in the importer (Importer.cpp).
#include "frontend/onnx/converters/Converters.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace kiln::onnx {

namespace {

HostTensor int64Tensor(std::vector<int64_t> shape, const std::vector<int64_t> &values) {
  HostTensor tensor(DType::I64, std::move(shape));
  std::copy(values.begin(), values.end(), tensor.as<int64_t>().begin());
  return tensor;
}

// Axes counted from the end when negative, each checked against `rank`.
Expected<std::vector<int64_t>> normalizeAxes(OnnxNode &node, std::vector<int64_t> axes,
                                             int64_t rank) {
  for (int64_t &axis : axes) {
    KILN_TRY(axis, normalizeAxis(node, axis, rank, "axis"));
  }
  return axes;
}

// NumPy's broadcast of two shapes, or an error naming both.
Expected<Shape> broadcastShapes(OnnxNode &node, const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return node.fail(ErrorCode::ShapeMismatch,
                       fmt::format("shapes [{}] and [{}] do not broadcast", fmt::join(a, ","),
                                   fmt::join(b, ",")));
    result[i] = da == 1 ? db : da;
  }
  return result;
}

} // namespace

Expected<void> convertConstant(OnnxNode &node) {
  if (node.hasAttr("value")) {
    KILN_TRY(HostTensor value, node.tensorAttr("value"));
    node.setConstantOutput(0, std::move(value));
  } else if (node.hasAttr("value_float")) {
    node.setConstantOutput(0, HostTensor::fromDoubles(DType::F32, {}, std::vector<double>{
                                                          node.floatAttr("value_float", 0)}));
  } else if (node.hasAttr("value_floats")) {
    std::vector<double> values = node.floatsAttr("value_floats");
    node.setConstantOutput(0, HostTensor::fromDoubles(
                                  DType::F32, {static_cast<int64_t>(values.size())}, values));
  } else if (node.hasAttr("value_int")) {
    node.setConstantOutput(0, int64Tensor({}, {node.intAttr("value_int", 0)}));
  } else if (node.hasAttr("value_ints")) {
    std::vector<int64_t> values = node.intsAttr("value_ints");
    node.setConstantOutput(0, int64Tensor({static_cast<int64_t>(values.size())}, values));
  } else {
    node.reject("a value that is not a dense numeric tensor (sparse or string)");
    return node.rejection();
  }
  return {};
}

Expected<void> convertConstantOfShape(OnnxNode &node) {
  KILN_TRY(std::vector<int64_t> shape, node.intsInput(0, "shape"));
  double fill = 0.0;
  DType dtype = DType::F32;
  if (node.hasAttr("value")) {
    KILN_TRY(HostTensor value, node.tensorAttr("value"));
    if (value.numElements() != 1)
      return node.fail(ErrorCode::InvalidArgument,
                       fmt::format("attribute value must hold one element, not {}",
                                   value.typeStr()));
    fill = value.getDouble(0);
    dtype = value.dtype();
  }
  node.setOutput(0, constant(node.graph(), fill, shape, dtype));
  return {};
}

Expected<void> convertShape(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  int64_t rank = x.rank();
  auto clampAxis = [rank](int64_t axis) {
    return std::clamp<int64_t>(axis < 0 ? axis + rank : axis, 0, rank);
  };
  int64_t start = clampAxis(node.intAttr("start", 0));
  int64_t end = clampAxis(node.intAttr("end", rank));
  std::vector<int64_t> dims;
  for (int64_t axis = start; axis < end; ++axis) {
    KILN_TRY(int64_t dim, node.staticDim(x, axis));
    dims.push_back(dim);
  }
  node.setConstantOutput(0, int64Tensor({static_cast<int64_t>(dims.size())}, dims));
  return {};
}

Expected<void> convertSize(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  KILN_TRY(Shape shape, node.staticShape(x)); // a symbolic size is no constant
  node.setConstantOutput(0, int64Tensor({}, {ir::TensorType{x.dtype(), shape}.numElements()}));
  return {};
}

// 0 copies the input's dim (unless allowzero), -1 is inferred (by kiln's reshape). A copied
// symbolic dim is inferred instead, when nothing else is: the element counts agree, so the
// -1 is that dim.
Expected<void> convertReshape(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  if (const SizeVector *sizes = node.sizesInput(1)) {
    // A target computed from a symbolic shape (x.view(x.size(0), -1)): 0 copies the input's
    // size, -1 is inferred.
    std::vector<ir::SizeExpr> target = sizes->sizes;
    bool copyZeros = node.intAttr("allowzero", 0) == 0;
    for (size_t i = 0; i < target.size(); ++i)
      if (copyZeros && target[i].isConstant() && target[i].constant() == 0) {
        if (static_cast<int64_t>(i) >= x.rank())
          return node.fail(ErrorCode::ShapeMismatch,
                           fmt::format("shape {} copies dim {} of {}, which has no such dim",
                                       ir::sizesStr(target), i, x.str()));
        target[i] = x.type().size(static_cast<int64_t>(i));
      }
    node.setOutput(0, reshapeSizes(x, std::move(target)));
    return {};
  }
  KILN_TRY(std::vector<int64_t> shape, node.intsInput(1, "shape"));
  if (node.intAttr("allowzero", 0) == 0)
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] == 0) {
        auto axis = static_cast<int64_t>(i);
        if (axis >= x.rank())
          return node.fail(ErrorCode::ShapeMismatch,
                           fmt::format("shape [{}] copies dim {} of {}, which has no such dim",
                                       fmt::join(shape, ","), i, x.str()));
        if (!x.type().size(axis).isConstant() && std::ranges::count(shape, -1) == 0) {
          shape[i] = -1;
          continue;
        }
        KILN_TRY(shape[i], node.staticDim(x, axis));
      }
  node.setOutput(0, reshape(x, shape));
  return {};
}

Expected<void> convertFlatten(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  // Flatten's axis may be rank itself (everything in the outer dim); negative counts from rank.
  int64_t axis = node.intAttr("axis", 1);
  if (axis < 0)
    axis += x.rank();
  if (axis < 0 || axis > x.rank())
    return node.fail(ErrorCode::InvalidArgument,
                     fmt::format("axis {} is out of range for {}", node.intAttr("axis", 1),
                                 x.str()));
  // The product of dims [from, to), or -1 where one is symbolic (for kiln's reshape to infer).
  auto product = [&](int64_t from, int64_t to) {
    int64_t size = 1;
    for (int64_t d = from; d < to; ++d) {
      if (!x.type().size(d).isConstant())
        return int64_t{-1};
      size *= x.dim(d);
    }
    return size;
  };
  int64_t outer = product(0, axis), inner = product(axis, x.rank());
  if (outer < 0 && inner < 0) // two -1s: fail, naming a symbol
    return std::unexpected(node.staticShape(x).error());
  node.setOutput(0, reshape(x, {outer, inner}));
  return {};
}

Expected<void> convertTranspose(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  std::vector<int64_t> reversed(static_cast<size_t>(x.rank()));
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  node.setOutput(0, transpose(x, node.intsAttr("perm", reversed)));
  return {};
}

Expected<void> convertSqueeze(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  std::vector<int64_t> axes;
  if (node.hasInput(1)) {
    KILN_TRY(axes, node.intsInput(1, "axes"));
  } else {
    KILN_TRY(Shape shape, node.staticShape(x)); // a symbolic dim may or may not be 1
    for (int64_t axis = 0; axis < x.rank(); ++axis)
      if (shape[static_cast<size_t>(axis)] == 1)
        axes.push_back(axis);
  }
  node.setOutput(0, squeeze(x, axes));
  return {};
}

Expected<void> convertUnsqueeze(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  KILN_TRY(std::vector<int64_t> axes, node.intsInput(1, "axes"));
  node.setOutput(0, unsqueeze(x, axes));
  return {};
}

Expected<void> convertConcat(OnnxNode &node) {
  std::vector<Tensor> parts;
  for (size_t i = 0; i < node.numInputs(); ++i) {
    KILN_TRY(Tensor part, node.input(i));
    parts.push_back(part);
  }
  if (parts.empty())
    return node.fail(ErrorCode::FormatError, "no inputs");
  node.setOutput(0, concat(parts, node.intAttr("axis", 0)));
  return {};
}

// Sizes from the `split` input, or equal parts (the last smaller, as opset 18 allows).
Expected<void> convertSplit(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  KILN_TRY(int64_t axis, normalizeAxis(node, node.intAttr("axis", 0), x.rank(), "axis"));
  int64_t parts = static_cast<int64_t>(node.numOutputs());
  KILN_TRY(int64_t length, node.staticDim(x, axis));
  std::vector<int64_t> sizes;
  if (node.hasInput(1)) {
    KILN_TRY(sizes, node.intsInput(1, "split"));
  } else {
    int64_t each = (length + parts - 1) / std::max<int64_t>(parts, 1);
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::min(each, length - i * each));
  }
  if (static_cast<int64_t>(sizes.size()) != parts ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != length ||
      std::any_of(sizes.begin(), sizes.end(), [](int64_t s) { return s < 0; }))
    return node.fail(ErrorCode::ShapeMismatch,
                     fmt::format("split sizes [{}] do not cut axis {} of {} into {} parts",
                                 fmt::join(sizes, ","), axis, x.str(), parts));
  int64_t start = 0;
  for (int64_t i = 0; i < parts; ++i) {
    node.setOutput(static_cast<size_t>(i), sliceAxis(x, axis, start, start + sizes[i]));
    start += sizes[i];
  }
  return {};
}

// ONNX clamps starts and ends to the axis (INT64_MAX means "to the end"). Positive steps map
// onto kiln's slice; an axis with a negative step is a gather of its indices, in order.
Expected<void> convertSlice(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  KILN_TRY(std::vector<int64_t> starts, node.intsInput(1, "starts"));
  KILN_TRY(std::vector<int64_t> ends, node.intsInput(2, "ends"));
  std::vector<int64_t> axes(starts.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (node.hasInput(3)) {
    KILN_TRY(axes, node.intsInput(3, "axes"));
  }
  std::vector<int64_t> steps(starts.size(), 1);
  if (node.hasInput(4)) {
    KILN_TRY(steps, node.intsInput(4, "steps"));
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return node.fail(ErrorCode::ShapeMismatch,
                     fmt::format("starts, ends, axes and steps have {}, {}, {} and {} values",
                                 starts.size(), ends.size(), axes.size(), steps.size()));
  KILN_TRY(axes, normalizeAxes(node, axes, x.rank()));
  std::vector<int64_t> allStarts(static_cast<size_t>(x.rank()), 0);
  // Axes not sliced are taken whole, a symbolic one included; a sliced axis must be static.
  std::vector<int64_t> allStops = x.shape();
  std::vector<int64_t> allSteps(static_cast<size_t>(x.rank()), 1);
  std::vector<std::pair<int64_t, std::vector<int64_t>>> reversedAxes;
  for (size_t i = 0; i < axes.size(); ++i) {
    KILN_TRY(int64_t size, node.staticDim(x, axes[i]));
    int64_t step = steps[i];
    if (step == 0)
      return node.fail(ErrorCode::InvalidArgument, fmt::format("step 0 on axis {}", axes[i]));
    int64_t start = starts[i] < 0 ? starts[i] + size : starts[i];
    int64_t end = ends[i] < 0 && ends[i] != std::numeric_limits<int64_t>::min()
                      ? ends[i] + size
                      : ends[i];
    size_t axis = static_cast<size_t>(axes[i]);
    if (step > 0) {
      allStarts[axis] = std::clamp<int64_t>(start, 0, size);
      allStops[axis] = std::max(std::clamp<int64_t>(end, 0, size), allStarts[axis]);
      allSteps[axis] = step;
    } else {
      start = std::clamp<int64_t>(start, 0, size - 1);
      end = std::clamp<int64_t>(end, -1, size - 1);
      std::vector<int64_t> indices;
      for (int64_t index = start; index > end; index += step)
        indices.push_back(index);
      reversedAxes.emplace_back(axes[i], std::move(indices));
    }
  }
  Tensor y = slice(x, allStarts, allStops, allSteps);
  for (auto &[axis, indices] : reversedAxes) {
    HostTensor values(DType::I64, {static_cast<int64_t>(indices.size())});
    std::copy(indices.begin(), indices.end(), values.as<int64_t>().begin());
    y = gather(y, constant(node.graph(), values), axis);
  }
  node.setOutput(0, y);
  return {};
}

// Negative indices count from the end in ONNX: constant ones are fixed here, others at run time.
Expected<void> convertGather(OnnxNode &node) {
  KILN_TRY(Tensor data, node.input(0));
  KILN_TRY(int64_t axis, normalizeAxis(node, node.intAttr("axis", 0), data.rank(), "axis"));
  KILN_TRY(int64_t size, node.staticDim(data, axis));
  Tensor indices;
  if (const HostTensor *known = node.knownValue(1)) {
    HostTensor fixed = known->castTo(DType::I64);
    for (int64_t &index : fixed.as<int64_t>()) {
      if (index < -size || index >= size)
        return node.fail(ErrorCode::InvalidArgument,
                         fmt::format("index {} is out of range for axis {} of {}", index, axis,
                                     data.str()));
      if (index < 0)
        index += size;
    }
    indices = constant(node.graph(), fixed);
  } else {
    KILN_TRY(indices, node.input(1));
    indices = where(indices < 0.0, indices + static_cast<double>(size), indices);
  }
  node.setOutput(0, gather(data, indices, axis));
  return {};
}

// Bidirectional broadcast: the result has the broadcast of x's shape and `shape`.
Expected<void> convertExpand(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  KILN_TRY(std::vector<int64_t> shape, node.intsInput(1, "shape"));
  KILN_TRY(Shape from, node.staticShape(x));
  KILN_TRY(Shape target, broadcastShapes(node, from, shape));
  node.setOutput(0, target == from ? x : broadcastTo(x, target));
  return {};
}

Expected<void> convertPad(OnnxNode &node) {
  std::string mode = node.stringAttr("mode", "constant");
  if (mode != "constant") {
    node.reject(fmt::format("attribute mode = '{}'", mode));
    return node.rejection();
  }
  KILN_TRY(Tensor x, node.input(0));
  KILN_TRY(std::vector<int64_t> pads, node.intsInput(1, "pads"));
  if (static_cast<int64_t>(pads.size()) != 2 * x.rank())
    return node.fail(ErrorCode::ShapeMismatch,
                     fmt::format("pads has {} values, {} needs {}", pads.size(), x.str(),
                                 2 * x.rank()));
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p < 0; })) {
    node.reject(fmt::format("negative pads [{}]", fmt::join(pads, ",")));
    return node.rejection();
  }
  double value = 0.0;
  if (node.hasInput(2)) {
    KILN_TRY(const HostTensor *fill, node.constantInput(2, "constant_value"));
    if (fill->numElements() > 0)
      value = fill->getDouble(0);
  }
  std::vector<int64_t> low(pads.begin(), pads.begin() + x.rank());
  std::vector<int64_t> high(pads.begin() + x.rank(), pads.end());
  node.setOutput(0, pad(x, low, high, value));
  return {};
}

Expected<void> convertRange(OnnxNode &node) {
  KILN_TRY(const HostTensor *start, node.constantInput(0, "start"));
  KILN_TRY(const HostTensor *limit, node.constantInput(1, "limit"));
  KILN_TRY(const HostTensor *delta, node.constantInput(2, "delta"));
  double first = start->getDouble(0), last = limit->getDouble(0), step = delta->getDouble(0);
  if (step == 0.0)
    return node.fail(ErrorCode::InvalidArgument, "delta is 0");
  double count = std::max(std::ceil((last - first) / step), 0.0);
  if (count > static_cast<double>(1 << 24))
    return node.fail(ErrorCode::InvalidArgument,
                     fmt::format("the range holds {} elements", count));
  std::vector<double> values(static_cast<size_t>(count));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = first + step * static_cast<double>(i);
  node.setConstantOutput(0, HostTensor::fromDoubles(start->dtype(),
                                                    {static_cast<int64_t>(values.size())},
                                                    values));
  return {};
}

// Keeps the upper (col - row >= k) or lower (col - row <= k) triangle of the last two axes.
Expected<void> convertTrilu(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  if (x.rank() < 2)
    return node.fail(ErrorCode::ShapeMismatch, fmt::format("input {} has rank < 2", x.str()));
  int64_t k = 0;
  if (node.hasInput(1)) {
    KILN_TRY(std::vector<int64_t> ks, node.intsInput(1, "k"));
    k = ks.empty() ? 0 : ks[0];
  }
  KILN_TRY(int64_t rows, node.staticDim(x, -2));
  KILN_TRY(int64_t cols, node.staticDim(x, -1));
  Shape square = {rows, cols};
  Tensor offset = iota(node.graph(), square, 1) - iota(node.graph(), square, 0);
  Tensor keep = node.intAttr("upper", 1) != 0 ? offset >= static_cast<double>(k)
                                              : offset <= static_cast<double>(k);
  node.setOutput(0, where(keep, x, scalarLike(x, 0.0)));
  return {};
}

} // namespace kiln::onnx
