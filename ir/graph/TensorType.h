// TensorType: the shape and dtype of every graph value, with symbolic sizes
// in a graph that declares size symbols (docs/dynamic-shapes.md).
#pragma once

#include "ir/graph/SizeExpr.h"
#include "support/DType.h"
#include "support/ShapeLimits.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::ir {

using Shape = std::vector<int64_t>;

/// A tensor's type. Rank 0 is a scalar. Every dimension is >= 0.
/// In a symbolic graph `symbolicDims` holds one SizeExpr per dim (a constant
/// for a static dim) and `shape` holds each one's upper bound over the
/// symbols' ranges, which is what memory planning and layout decisions need;
/// the verifier checks shape[i] == symbolicDims[i].upperBound(). A static type
/// leaves symbolicDims empty.
struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<SizeExpr> symbolicDims = {};

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numElements() const;
  int64_t dim(int64_t axis) const { return shape.at(static_cast<size_t>(axis)); }
  bool isSymbolic() const { return !symbolicDims.empty(); }
  /// The size of `axis` as a SizeExpr: symbolic, or the constant shape[axis].
  SizeExpr size(int64_t axis) const;
  /// Every dim's size(): what shape inference computes with.
  std::vector<SizeExpr> sizes() const;
  bool operator==(const TensorType &) const = default;

  /// The canonical text form, e.g. "f32[8,1,28,28]", "f32[N,784]" or "i64[]".
  std::string str() const;
};

/// The type with these sizes: shape their upper bounds, symbolicDims empty when
/// every size is constant. Fails when a size can be negative in the symbols'
/// ranges (naming the size and its lower bound) or its bounds overflow.
Expected<TensorType> makeTensorType(DType dtype, std::vector<SizeExpr> sizes);

/// The product of `type`'s sizes over `axes` (each in [0, rank)): the count a mean over them
/// divides by, an expression over the size symbols when one of them is symbolic.
Expected<SizeExpr> sizeOverAxes(const TensorType &type, std::span<const int64_t> axes);

/// "[N,784]", the sizes' text form.
std::string sizesStr(const std::vector<SizeExpr> &sizes);

// The size rule (kMaxElements, checkedNumElements) lives in support/ so host
// tensors share it; the IR names it here too.
using kiln::checkedNumElements;
using kiln::kMaxElements;

/// "[8,1,28,28]".
std::string shapeStr(const Shape &shape);

/// Row-major strides of `shape` in elements.
std::vector<int64_t> rowMajorStrides(const Shape &shape);

} // namespace kiln::ir
