// From a symbolic graph to a static one: the symbols' values implied by actual
// input shapes (bindSymbols), and the graph with those values put in (specialize).
#pragma once

#include "ir/graph/Graph.h"
#include "ir/graph/SymbolBinding.h"

#include <map>
#include <memory>
#include <span>

namespace kiln::ir {

/// The value of every symbol of `graph`, read from the leaves' actual shapes.
/// A dim that is a bare symbol binds it; any other symbolic dim must then
/// evaluate to the actual size (or, with one unbound symbol, determine it
/// uniquely). Errors name the input, the dim, the symbol, its range and the
/// actual size; two inputs that disagree on a symbol are both named. A leaf
/// missing from `shapes` is skipped (its caller reports it).
Expected<SymbolBindings> bindSymbols(const Graph &graph, const LeafShapes &shapes);

/// A static copy of `graph` with every symbol replaced by its value in
/// `bindings` (each in its range), verified. Reshape and broadcast_to targets
/// become their `shape` at those values.
Expected<std::unique_ptr<Graph>> specialize(const Graph &graph, const SymbolBindings &bindings);

/// A copy of `graph` whose symbols named in `ranges` take those (narrower) ranges, verified:
/// what a model compiled for part of the range is built from (a size bucket,
/// docs/dynamic-shapes.md). A range that is not within the declared one is an error.
Expected<std::unique_ptr<Graph>> narrowSymbols(const Graph &graph,
                                               std::span<const SizeSymbol> ranges);

/// A copy of `graph` whose symbols named in `ranges` take those (wider) ranges, verified: what
/// a model recompiled for a size outside its range is built from. A range that does not hold
/// the declared one is an error, and so is a graph that is not valid over the wider range (a
/// size that could then be negative).
Expected<std::unique_ptr<Graph>> widenSymbols(const Graph &graph,
                                              std::span<const SizeSymbol> ranges);

/// An error naming the first parameter of `graph` with symbolic sizes: a compiled model binds
/// its symbols from the inputs of each run, and keeps one size for every parameter.
Expected<void> requireStaticParams(const Graph &graph);

} // namespace kiln::ir
