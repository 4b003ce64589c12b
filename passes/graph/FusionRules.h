// Internals of fusion shared by Fusion.cpp and FusionPrint.cpp: the per-op
// rules (which op anchors a group, which is recomputed everywhere) and value names.
#pragma once

#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"

#include <string>
#include <unordered_map>

namespace kiln::passes::fusion {

/// The part an op plays in fusion.
enum class FusionRole {
  Free,         ///< elementwise or data movement: joins whatever group the tree rule allows
  Anchor,       ///< reduction, row, pooling, contraction or opaque: at most one per group
  Duplicated,   ///< a scalar constant, an iota, data movement of constants: recomputed in
                ///< every group that reads it
  Constant,     ///< a constant of more than one element: its own Constant group
  Decomposable, ///< attention or a composite elementwise op: no kernel, decompose it first
};

FusionRole fusionRole(const ir::Node &node);

/// The kind of group an anchor builds (Opaque for an anchor no kernel template covers).
GroupKind anchorKind(const ir::Node &anchor);

/// Contraction and opaque kernels read their operands from memory, so every
/// operand is materialized: no prologue. Neither does a depthwise conv2d: its
/// window reads each input element up to KH*KW times, and a prologue would be
/// computed as often (a SiLU's exponential 9 or 25 times per element).
bool takesNoPrologue(const ir::Node &anchor);

/// Whether `node` may sit between `anchor` and the group's root: an
/// elementwise op (not data movement) of the anchor's shape, so the epilogue
/// runs once per anchor result element and never broadcasts the anchor's value.
bool isEpilogueOp(const ir::Node &node, const ir::Node &anchor);

/// Whether `user` reads `value` at positions its indices choose (the data operand of a
/// gather or take_along_axis), possibly many times each.
bool readsGathered(const ir::Node &user, const ir::Value *value);

/// reshape, squeeze and unsqueeze: the same bytes under a new shape.
bool isAliasOp(const ir::Node &node);

/// The names ir::printGraph gives values (%x for inputs and parameters, %0,
/// %1, ... for node results in topological order), so a fusion listing reads
/// against the printed graph.
class ValueNames {
public:
  explicit ValueNames(const ir::Graph &graph);
  std::string operator()(const ir::Value *value) const;

private:
  std::unordered_map<const ir::Value *, std::string> names_;
};

} // namespace kiln::passes::fusion
