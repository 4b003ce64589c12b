// TensorType: the static shape and dtype of every graph value.
#pragma once

#include "support/DType.h"
#include "support/ShapeLimits.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::ir {

using Shape = std::vector<int64_t>;

/// A tensor's static type. Rank 0 is a scalar. Every dimension is >= 0.
struct TensorType {
  DType dtype = DType::F32;
  Shape shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numElements() const;
  int64_t dim(int64_t axis) const { return shape.at(static_cast<size_t>(axis)); }
  bool operator==(const TensorType &) const = default;

  /// The canonical text form, e.g. "f32[8,1,28,28]" or "i64[]".
  std::string str() const;
};

// The size rule (kMaxElements, checkedNumElements) lives in support/ so host
// tensors share it; the IR names it here too.
using kiln::checkedNumElements;
using kiln::kMaxElements;

/// "[8,1,28,28]".
std::string shapeStr(const Shape &shape);

/// Row-major strides of `shape` in elements.
std::vector<int64_t> rowMajorStrides(const Shape &shape);

} // namespace kiln::ir
