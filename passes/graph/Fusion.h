// Fusion: partitions a graph into groups, each of which becomes one kernel.
// An analysis, not a rewrite: the graph is unchanged and the plan points into it.
#pragma once

#include "ir/graph/Graph.h"
#include "support/Error.h"

#include <string>
#include <string_view>
#include <vector>

namespace kiln::passes {

/// What kind of kernel a group becomes. The kind is decided by the group's anchor.
enum class GroupKind {
  Pointwise,   ///< elementwise ops, broadcasts, movement (transpose, slice, pad, concat, gather, ...)
  Reduction,   ///< reduce_* / argmax / argmin with a pointwise prologue and epilogue
  RowNorm,     ///< softmax, log_softmax, layer_norm: a multi-pass row kernel
  Pooling,     ///< max_pool2d, avg_pool2d, global_avg_pool and depthwise conv2d (a window per
               ///< channel) with a prologue and epilogue
  Contraction, ///< matmul (batched too) or conv2d with a fused elementwise epilogue
  Constant,    ///< a constant too large to inline: its data is baked into the model
  Alias,       ///< a reshape/squeeze/unsqueeze chain of a materialized value: no kernel
  Opaque,      ///< anything else, alone in its group (an op no kernel template covers)
};

std::string_view groupKindName(GroupKind kind);

/// A conv2d whose every output channel reads only its own input channel (groups = input
/// channels = output channels): a weighted window per channel, as a pool is, with no
/// reduction over channels for a GEMM to block. It anchors a Pooling group.
bool isDepthwiseConv2D(const ir::Node &node);

/// One kernel's worth of nodes. Every group computes exactly one materialized
/// value, the result of `root`; every other node's value lives only inside the
/// kernel (its users are all in this group and it is not a graph output).
struct FusionGroup {
  int id = 0;
  GroupKind kind = GroupKind::Pointwise;
  /// The group's nodes in topological order; `root` is last.
  std::vector<const ir::Node *> nodes;
  const ir::Node *root = nullptr;
  /// The reduction, row, pooling or contraction node the group is built
  /// around; nullptr for pointwise, constant, alias and opaque groups.
  const ir::Node *anchor = nullptr;
  /// The materialized values the kernel reads (graph inputs, parameters and
  /// other groups' roots), each once, in order of first use by `nodes`.
  std::vector<const ir::Value *> inputs;

  bool contains(const ir::Node *node) const;
};

/// Whether the group becomes a kernel: not an alias or a constant, and its
/// result has elements (a group computing an empty tensor has nothing to do,
/// and a kernel with an empty thread nest is not a valid GPU kernel).
bool needsKernel(const FusionGroup &group);

/// The groups of a graph in an order that runs every group after the groups it reads.
struct FusionPlan {
  std::vector<FusionGroup> groups;

  /// The group that computes `node`, or nullptr when the node is in no group
  /// (a node may sit in several groups only if it is a duplicated scalar
  /// constant or iota; this returns the first).
  const FusionGroup *groupOf(const ir::Node *node) const;
};

/// The longest chain of ops one group may hold. A longer chain becomes several
/// kernels: lowering and codegen walk a kernel's expression recursively, and
/// a chain of thousands of fused ops would exhaust the stack (and compile
/// slowly) while saving almost nothing over one more memory round trip.
inline constexpr int kMaxFusedDepth = 256;

/// The most materialized values one kernel may read. A node that would take
/// a group past it starts a group of its own: every input is a kernel
/// argument, and GPU kernels have a few KiB of parameter space (64 pointers
/// fit in any), while LLVM's vectorizer slows quadratically in them. A single
/// node with more operands (only concat has unbounded operands) is split
/// first by the "split-concat" pass.
inline constexpr size_t kMaxKernelInputs = 64;

/// Partitions `graph` (verified, with no decomposable composite op that has no
/// kernel) into fusion groups. Never creates a cycle between groups.
Expected<FusionPlan> planFusion(const ir::Graph &graph);

/// A deterministic listing of the plan, one line per group (used by
/// `kiln-opt --passes=...,fuse` and `kiln compile --dump=fused`).
std::string printFusionPlan(const ir::Graph &graph, const FusionPlan &plan);

/// A Graphviz picture of the fused graph: one cluster per group.
std::string fusionPlanToDot(const ir::Graph &graph, const FusionPlan &plan);

} // namespace kiln::passes
