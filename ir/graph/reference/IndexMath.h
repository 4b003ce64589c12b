// Row-major index arithmetic shared by the reference implementations: NumPy
// broadcasting of an operand onto a result shape, splitting a shape around an
// axis, and an odometer that walks a shape while keeping several strided
// offsets in step. Whole-shape counts and strides are TensorType's
// (numElements, rowMajorStrides).
#pragma once

#include "ir/graph/OpTable.h"

#include <array>
#include <cstdint>
#include <vector>

namespace kiln::ir::reference {

/// Strides that read a row-major tensor of shape `operand` as if it had been
/// NumPy-broadcast to `result`: one stride per result axis, 0 on axes the
/// operand lacks or has as size 1. `operand` must be broadcastable to `result`.
inline std::vector<int64_t> broadcastStrides(const Shape &operand, const Shape &result) {
  std::vector<int64_t> own = rowMajorStrides(operand);
  std::vector<int64_t> strides(result.size(), 0);
  size_t offset = result.size() - operand.size();
  for (size_t i = 0; i < operand.size(); ++i)
    strides[offset + i] = operand[i] == 1 && result[offset + i] != 1 ? 0 : own[i];
  return strides;
}

/// Maps a possibly negative axis into [0, rank). The axis has been validated.
inline int64_t wrapAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// Walks every multi-index of `shape` in row-major order, keeping `N` linear
/// offsets (one per stride vector) in step, so loops over broadcast or permuted
/// operands need no division per element.
template <size_t N> class StridedWalker {
public:
  StridedWalker(const Shape &shape, std::array<std::vector<int64_t>, N> strides,
                std::array<int64_t, N> base = {})
      : shape_(shape), strides_(std::move(strides)), index_(shape.size(), 0), offsets_(base) {}

  int64_t offset(size_t which) const { return offsets_[which]; }

  /// Steps to the next multi-index (the last axis moves fastest).
  void next() {
    for (size_t axis = shape_.size(); axis-- > 0;) {
      for (size_t k = 0; k < N; ++k)
        offsets_[k] += strides_[k][axis];
      if (++index_[axis] < shape_[axis])
        return;
      for (size_t k = 0; k < N; ++k)
        offsets_[k] -= strides_[k][axis] * shape_[axis];
      index_[axis] = 0;
    }
  }

private:
  Shape shape_;
  std::array<std::vector<int64_t>, N> strides_;
  std::vector<int64_t> index_;
  std::array<int64_t, N> offsets_;
};

/// Splits a tensor around one axis: `outer` elements before it, the axis'
/// size, and `inner` elements after it, so element (o, i, n) lives at
/// (o * size + i) * inner + n.
struct AxisSplit {
  int64_t outer;
  int64_t size;
  int64_t inner;
};

inline AxisSplit splitAround(const Shape &shape, int64_t axis) {
  size_t a = static_cast<size_t>(axis);
  int64_t outer = 1;
  for (size_t i = 0; i < a; ++i)
    outer *= shape[i];
  // The stride of an axis is the product of the sizes after it.
  return {outer, shape[a], rowMajorStrides(shape)[a]};
}

} // namespace kiln::ir::reference
