// The values of a symbolic model's size symbols in one run, read from the actual shapes of
// its inputs (docs/dynamic-shapes.md). Below the graph: the runtime binds a loaded plan's
// symbols with it.
#pragma once

#include "ir/graph/TensorType.h"

#include <map>
#include <span>
#include <string>

namespace kiln::ir {

/// Actual shapes of a graph's inputs (and parameters), by name.
using LeafShapes = std::map<std::string, Shape, std::less<>>;

/// An input or parameter as bindSymbols reads it. A dim that is a bare symbol binds it; any
/// other symbolic dim must then evaluate to the actual size (or, with one unbound symbol,
/// determine it uniquely). Errors name the leaf, the dim, the symbol, its range and the
/// actual size; two leaves that disagree on a symbol are both named. A leaf missing from
/// `shapes` is skipped (its caller reports it).
struct SymbolicLeaf {
  std::string name;
  bool isParam = false;
  TensorType type;
};
Expected<SymbolBindings> bindSymbols(std::span<const SymbolicLeaf> leaves,
                                     const LeafShapes &shapes);

} // namespace kiln::ir
