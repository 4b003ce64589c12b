// The DSL's shape specs: an input's dims as sizes or named size symbols,
// graph.input("x", {kiln::dim("N", 1, 256), 784}) (docs/dynamic-shapes.md).
#pragma once

#include "ir/graph/SizeExpr.h"
#include "ir/graph/TensorType.h"

#include <initializer_list>
#include <vector>

namespace kiln {

/// One dim of an input: a static size or a size symbol with its range.
class Dim {
public:
  /// A static size. Implicit, so {8, 784} reads as before.
  Dim(int64_t size) : size_(size) {}
  /// The size symbol `name`, ranging over [min, max].
  static Dim symbol(std::string name, int64_t min, int64_t max) {
    Dim dim(0);
    dim.symbol_ = ir::SizeSymbol{std::move(name), min, max};
    return dim;
  }

  bool isSymbol() const { return symbol_.has_value(); }
  const ir::SizeSymbol &symbol() const { return *symbol_; }
  int64_t size() const { return size_; }

private:
  int64_t size_;
  std::optional<ir::SizeSymbol> symbol_;
};

/// A size symbol for an input dim: kiln::dim("N", 1, 256). The same name used
/// twice is the same symbol; declaring it again with another range is an error.
inline Dim dim(std::string name, int64_t min, int64_t max) {
  return Dim::symbol(std::move(name), min, max);
}
/// The same with the DSL's default least value, 1.
inline Dim dim(std::string name, int64_t max) { return Dim::symbol(std::move(name), 1, max); }

/// An input's shape: sizes and symbols. Converts from a plain Shape.
class ShapeSpec {
public:
  ShapeSpec() = default;
  ShapeSpec(std::initializer_list<Dim> dims) : dims_(dims) {}
  ShapeSpec(const ir::Shape &shape) : dims_(shape.begin(), shape.end()) {}
  ShapeSpec(std::vector<Dim> dims) : dims_(std::move(dims)) {}

  const std::vector<Dim> &dims() const { return dims_; }

private:
  std::vector<Dim> dims_;
};

} // namespace kiln
