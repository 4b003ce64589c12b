// TensorType: the static shape and dtype of every graph value.
#pragma once

#include "support/DType.h"

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

/// The most elements a tensor may have: 2^53, so element counts and flat
/// indices stay exact in fp64 and far from int64 overflow. The bound applies to
/// the product of the non-zero dimensions, because strides multiply the other
/// dimensions even when one of them is zero.
inline constexpr int64_t kMaxElements = int64_t{1} << 53;

/// The element count of `shape`, or nullopt when a dimension is negative or
/// the product of its non-zero dimensions exceeds kMaxElements (checked
/// without overflowing).
std::optional<int64_t> checkedNumElements(const Shape &shape);

/// "[8,1,28,28]".
std::string shapeStr(const Shape &shape);

/// Row-major strides of `shape` in elements.
std::vector<int64_t> rowMajorStrides(const Shape &shape);

} // namespace kiln::ir
