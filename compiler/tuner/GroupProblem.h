// One fusion group as a problem the tuner can run alone: its computation
// extracted as a small graph, random input sets, and the fp64 reference's
// answer for the first set, against which every candidate is checked.
#pragma once

#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace kiln::tuning {

struct GroupProblem {
  /// The group's nodes over one graph input per group input ("in0", "in1",
  /// ... in group.inputs order), with the root as the output "out".
  std::unique_ptr<ir::Graph> graph;
  /// inputSets[s][i] is input i of set s (the kernel's first parameters).
  std::vector<std::vector<HostTensor>> inputSets;
  /// The reference interpreter's output for inputSets[0].
  HostTensor expected;
  ir::TensorType outputType;
  /// A symbolic graph's size symbols at their maxima, in declaration order: the `sizes`
  /// parameter of kernels that read sizes at run time (the inputs are at those sizes).
  std::vector<int64_t> sizes;
};

/// The group's computation as a graph of its own (see GroupProblem::graph).
Expected<std::unique_ptr<ir::Graph>> extractGroupGraph(const ir::Graph &graph,
                                                       const passes::FusionGroup &group);

/// Extracts `group`, draws `numInputSets` (at least 1) random input sets from
/// `seed` and runs the reference on the first. Floats are N(0, 1); integers
/// feeding an index operand are 0 (always in range), other integers small.
Expected<GroupProblem> makeGroupProblem(const ir::Graph &graph, const passes::FusionGroup &group,
                                        int numInputSets, uint64_t seed);

} // namespace kiln::tuning
