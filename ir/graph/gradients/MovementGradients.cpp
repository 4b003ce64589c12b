// Gradient rules of the data-movement ops that move elements without looking
// at them: each is the adjoint movement (reshape back, inverse permutation,
// sum over broadcast axes, scatter into zeros by dilation and padding).
#include "ir/graph/Gradients.h"
#include "ir/graph/ShapeInference.h"
#include "ir/graph/gradients/GradientBuilder.h"

#include <algorithm>

namespace kiln::ir {

namespace {

using Gradients = std::vector<Value *>;

Expected<Gradients> reshapeBack(Graph &graph, const Node &node, Value *g) {
  GradientBuilder b(graph, node);
  KILN_TRY(Value * gradient, b.reshape(g, node.operand(0)->type().sizes()));
  return Gradients{gradient};
}

/// Python's clamping of a slice start (step >= 1) into [0, size].
int64_t clampedStart(int64_t start, int64_t size) {
  if (start < 0)
    return std::max<int64_t>(start + size, 0);
  return std::min(start, size);
}

} // namespace

Expected<Gradients> gradientReshape(Graph &graph, const Node &node, Value *g) {
  return reshapeBack(graph, node, g);
}

Expected<Gradients> gradientSqueeze(Graph &graph, const Node &node, Value *g) {
  return reshapeBack(graph, node, g);
}

Expected<Gradients> gradientUnsqueeze(Graph &graph, const Node &node, Value *g) {
  return reshapeBack(graph, node, g);
}

Expected<Gradients> gradientTranspose(Graph &graph, const Node &node, Value *g) {
  GradientBuilder b(graph, node);
  const std::vector<int64_t> &perm = getInts(node.attrs(), "perm");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  KILN_TRY(Value * gradient, b.op(OpKind::Transpose, {g}, {{"perm", inverse}}));
  return Gradients{gradient};
}

Expected<Gradients> gradientBroadcastTo(Graph &graph, const Node &node, Value *g) {
  GradientBuilder b(graph, node);
  KILN_TRY(Value * gradient, b.sumToShape(g, node.operand(0)->type().sizes()));
  return Gradients{gradient};
}

Expected<Gradients> gradientSlice(Graph &graph, const Node &node, Value *g) {
  // Each axis: interior zeros between the taken elements (step - 1 of them),
  // then padding up to the taken range's start and from its end to the size.
  GradientBuilder b(graph, node);
  const TensorType &type = node.operand(0)->type();
  if (node.type().numElements() == 0) {
    KILN_TRY(Value * zeros, b.zeros(type));
    return Gradients{zeros};
  }
  const std::vector<int64_t> &starts = getInts(node.attrs(), "starts");
  const std::vector<int64_t> &steps = getInts(node.attrs(), "steps");
  Value *spread = g;
  std::vector<int64_t> low(type.shape.size()), high(type.shape.size());
  for (size_t axis = 0; axis < type.shape.size(); ++axis) {
    int64_t size = type.shape[axis];
    int64_t taken = node.type().shape[axis];
    int64_t start = clampedStart(starts[axis], size);
    if (taken > 1) {
      KILN_TRY(spread, b.dilate(spread, static_cast<int64_t>(axis), steps[axis]));
    }
    low[axis] = start;
    high[axis] = size - (start + (taken - 1) * steps[axis] + 1);
  }
  if (std::any_of(low.begin(), low.end(), [](int64_t v) { return v != 0; }) ||
      std::any_of(high.begin(), high.end(), [](int64_t v) { return v != 0; })) {
    KILN_TRY(spread, b.op(OpKind::Pad, {spread}, {{"low", low}, {"high", high}}));
  }
  return Gradients{spread};
}

Expected<Gradients> gradientConcat(Graph &graph, const Node &node, Value *g) {
  GradientBuilder b(graph, node);
  int64_t rank = node.type().rank();
  int64_t axis = normalizedAxisAttr(node, "axis", rank);
  Gradients gradients;
  int64_t offset = 0;
  for (Value *operand : node.operands()) {
    int64_t size = operand->type().dim(axis);
    std::vector<int64_t> starts(static_cast<size_t>(rank), 0), steps(static_cast<size_t>(rank), 1);
    Shape stops = node.type().shape;
    starts[static_cast<size_t>(axis)] = offset;
    stops[static_cast<size_t>(axis)] = offset + size;
    offset += size;
    KILN_TRY(Value * piece,
             b.op(OpKind::Slice, {g}, {{"starts", starts}, {"steps", steps}, {"stops", stops}}));
    gradients.push_back(piece);
  }
  return gradients;
}

Expected<Gradients> gradientPad(Graph &graph, const Node &node, Value *g) {
  // The padding value is a constant: only the interior flows back.
  GradientBuilder b(graph, node);
  const std::vector<int64_t> &low = getInts(node.attrs(), "low");
  const Shape &shape = node.operand(0)->type().shape;
  std::vector<int64_t> stops(shape.size()), steps(shape.size(), 1);
  for (size_t axis = 0; axis < shape.size(); ++axis)
    stops[axis] = low[axis] + shape[axis];
  KILN_TRY(Value * gradient,
           b.op(OpKind::Slice, {g}, {{"starts", low}, {"steps", steps}, {"stops", stops}}));
  return Gradients{gradient};
}

} // namespace kiln::ir
