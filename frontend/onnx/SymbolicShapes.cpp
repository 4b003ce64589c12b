// Shape arithmetic on symbolic sizes at import (SymbolicShapes.h).
#include "frontend/onnx/SymbolicShapes.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace kiln::onnx {

namespace {

using ir::SizeExpr;

// ONNX TensorProto.DataType's integer types: a Cast to one keeps the sizes.
constexpr std::array<int64_t, 8> kIntegerTypes = {2, 3, 4, 5, 6, 7, 12, 13};

std::string sizesText(const SizeVector &value) {
  return value.scalar ? value.sizes.front().str() : ir::sizesStr(value.sizes);
}

Expected<SizeVector> vectorInput(OnnxNode &node, size_t index, std::string_view what) {
  KILN_TRY(SizeVector value, node.sizeValues(index, what));
  if (value.scalar)
    return node.fail(ErrorCode::ShapeMismatch,
                     fmt::format("{} {} must be 1-D here", what, sizesText(value)));
  return value;
}

Expected<SizeVector> shapeOf(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  std::vector<SizeExpr> sizes = x.type().sizes();
  auto rank = static_cast<int64_t>(sizes.size());
  auto clampAxis = [rank](int64_t axis) {
    return std::clamp<int64_t>(axis < 0 ? axis + rank : axis, 0, rank);
  };
  int64_t start = clampAxis(node.intAttr("start", 0));
  int64_t end = std::max(start, clampAxis(node.intAttr("end", rank)));
  return SizeVector{std::vector<SizeExpr>(sizes.begin() + start, sizes.begin() + end), false};
}

Expected<SizeVector> sizeOf(OnnxNode &node) {
  KILN_TRY(Tensor x, node.input(0));
  SizeExpr count(1);
  for (const SizeExpr &size : x.type().sizes()) {
    KILN_TRY(count, ir::multiply(count, size));
  }
  return SizeVector{{count}, true};
}

Expected<SizeVector> gather(OnnxNode &node) {
  if (node.intAttr("axis", 0) != 0)
    return node.fail(ErrorCode::Unsupported, "a Gather of sizes takes axis 0");
  KILN_TRY(SizeVector data, vectorInput(node, 0, "data"));
  KILN_TRY(const HostTensor *indices, node.constantInput(1, "indices"));
  KILN_TRY(std::vector<int64_t> picks, node.intsInput(1, "indices"));
  auto length = static_cast<int64_t>(data.sizes.size());
  SizeVector result{{}, indices->rank() == 0};
  for (int64_t pick : picks) {
    int64_t at = pick < 0 ? pick + length : pick;
    if (at < 0 || at >= length)
      return node.fail(
          ErrorCode::InvalidArgument,
          fmt::format("index {} is out of range for the sizes {}", pick, sizesText(data)));
    result.sizes.push_back(data.sizes[static_cast<size_t>(at)]);
  }
  return result;
}

Expected<SizeVector> unsqueeze(OnnxNode &node) {
  KILN_TRY(SizeVector data, node.sizeValues(0, "data"));
  std::vector<int64_t> axes;
  if (node.hasInput(1)) {
    KILN_TRY(axes, node.intsInput(1, "axes"));
  } else {
    axes = node.intsAttr("axes");
  }
  if (!data.scalar || axes.size() != 1 || (axes[0] != 0 && axes[0] != -1))
    return node.fail(
        ErrorCode::Unsupported,
        fmt::format("an Unsqueeze of the sizes {} to more than one dimension", sizesText(data)));
  data.scalar = false;
  return data;
}

Expected<SizeVector> squeeze(OnnxNode &node) {
  KILN_TRY(SizeVector data, vectorInput(node, 0, "data"));
  if (data.sizes.size() != 1)
    return node.fail(ErrorCode::ShapeMismatch,
                     fmt::format("cannot squeeze the sizes {} to a scalar", sizesText(data)));
  data.scalar = true;
  return data;
}

Expected<SizeVector> concat(OnnxNode &node) {
  int64_t axis = node.intAttr("axis", 0);
  if (axis != 0 && axis != -1)
    return node.fail(ErrorCode::InvalidArgument,
                     fmt::format("axis {} of a Concat of 1-D sizes", axis));
  SizeVector result;
  for (size_t i = 0; i < node.numInputs(); ++i) {
    KILN_TRY(SizeVector part, vectorInput(node, i, "input"));
    result.sizes.insert(result.sizes.end(), part.sizes.begin(), part.sizes.end());
  }
  return result;
}

Expected<SizeVector> slice(OnnxNode &node) {
  KILN_TRY(SizeVector data, vectorInput(node, 0, "data"));
  KILN_TRY(std::vector<int64_t> starts, node.intsInput(1, "starts"));
  KILN_TRY(std::vector<int64_t> ends, node.intsInput(2, "ends"));
  std::vector<int64_t> axes = {0}, steps = {1};
  if (node.hasInput(3)) {
    KILN_TRY(axes, node.intsInput(3, "axes"));
  }
  if (node.hasInput(4)) {
    KILN_TRY(steps, node.intsInput(4, "steps"));
  }
  if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 ||
      (axes[0] != 0 && axes[0] != -1) || steps.size() != 1 || steps[0] == 0)
    return node.fail(ErrorCode::InvalidArgument,
                     "a Slice of 1-D sizes takes one start, end, axis 0 and a nonzero step");
  // Python's slice rules, as ONNX defines them: negative from the end, clamped.
  auto length = static_cast<int64_t>(data.sizes.size());
  int64_t step = steps[0];
  auto clamp = [&](int64_t index, bool isStart) {
    if (index < 0)
      index += length;
    if (step > 0)
      return std::clamp<int64_t>(index, 0, length);
    return std::clamp<int64_t>(index, isStart ? 0 : -1, length - 1);
  };
  int64_t start = clamp(starts[0], true), end = clamp(ends[0], false);
  SizeVector result;
  for (int64_t i = start; step > 0 ? i < end : i > end; i += step)
    result.sizes.push_back(data.sizes[static_cast<size_t>(i)]);
  return result;
}

Expected<SizeVector> arithmetic(OnnxNode &node) {
  KILN_TRY(SizeVector a, node.sizeValues(0, "A"));
  KILN_TRY(SizeVector b, node.sizeValues(1, "B"));
  size_t length = std::max(a.sizes.size(), b.sizes.size());
  if ((a.sizes.size() != length && a.sizes.size() != 1) ||
      (b.sizes.size() != length && b.sizes.size() != 1))
    return node.fail(ErrorCode::ShapeMismatch, fmt::format("the sizes {} and {} do not broadcast",
                                                           sizesText(a), sizesText(b)));
  SizeVector result{{}, a.scalar && b.scalar};
  const std::string &op = node.opType();
  for (size_t i = 0; i < length; ++i) {
    const SizeExpr &x = a.sizes[a.sizes.size() == 1 ? 0 : i];
    const SizeExpr &y = b.sizes[b.sizes.size() == 1 ? 0 : i];
    Expected<SizeExpr> value = SizeExpr(0);
    if (op == "Add") {
      value = ir::add(x, y);
    } else if (op == "Sub") {
      value = ir::subtract(x, y);
    } else if (op == "Mul") {
      value = ir::multiply(x, y);
    } else if (!y.isConstant() || y.constant() <= 0) { // Div: sizes are >= 0, so it floors
      return node.fail(ErrorCode::Unsupported,
                       fmt::format("a Div of the size {} by {}: sizes divide by a positive "
                                   "constant only",
                                   x.str(), y.str()));
    } else {
      value = ir::floorDiv(x, y.constant());
    }
    if (!value)
      return node.fail(value.error().code(), value.error().message());
    result.sizes.push_back(*value);
  }
  return result;
}

} // namespace

bool foldsSymbolicSizes(std::string_view opType) {
  static constexpr std::array<std::string_view, 13> kOps = {
      "Shape", "Size",     "Gather", "Slice", "Concat", "Unsqueeze", "Squeeze",
      "Cast",  "Identity", "Add",    "Sub",   "Mul",    "Div"};
  return std::ranges::find(kOps, opType) != kOps.end();
}

Expected<SizeVector> foldSymbolicSizes(OnnxNode &node) {
  const std::string &op = node.opType();
  if (op == "Shape")
    return shapeOf(node);
  if (op == "Size")
    return sizeOf(node);
  if (op == "Gather")
    return gather(node);
  if (op == "Slice")
    return slice(node);
  if (op == "Concat")
    return concat(node);
  if (op == "Unsqueeze")
    return unsqueeze(node);
  if (op == "Squeeze")
    return squeeze(node);
  if (op == "Cast" &&
      std::ranges::find(kIntegerTypes, node.intAttr("to", 0)) == kIntegerTypes.end())
    return node.fail(ErrorCode::Unsupported, "a Cast of symbolic sizes to a non-integer type");
  if (op == "Cast" || op == "Identity")
    return node.sizeValues(0, "input");
  return arithmetic(node);
}

bool isSymbolic(const SizeVector &sizes) {
  return std::ranges::any_of(sizes.sizes, [](const SizeExpr &size) { return !size.isConstant(); });
}

Tensor sizesTensor(Graph &graph, const SizeVector &sizes) {
  std::vector<Tensor> parts;
  for (const SizeExpr &size : sizes.sizes) {
    Tensor value = size.isConstant()
                       ? constant(graph, static_cast<double>(size.constant()), {}, DType::I64)
                       : graph.apply(ir::OpKind::SymbolSize, {},
                                     {{"dtype", DType::I64}, {"size", std::vector<SizeExpr>{size}}},
                                     std::source_location::current());
    parts.push_back(sizes.scalar ? value : reshape(value, {1}));
  }
  return sizes.scalar ? parts.front() : concat(parts, 0);
}

} // namespace kiln::onnx
