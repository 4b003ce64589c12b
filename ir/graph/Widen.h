// Widening a graph's floats: the same computation with every value of one
// dtype held in a wider one (an f32 graph evaluated in f64), which is the
// reference the precision policies are judged against.
#pragma once

#include "ir/graph/Graph.h"
#include "support/HostTensor.h"

#include <memory>

namespace kiln::ir {

/// A copy of `graph` in which every value of dtype `from` has dtype `to`:
/// inputs, parameters and every dtype attribute equal to `from` (the targets
/// of casts, constants and iotas, contraction accumulators) change, and
/// allow_tf32 is cleared (it is a compute mode of f32 operands). Values of
/// other dtypes (an explicit cast to bf16, integer indices) stay as written,
/// so the copy keeps every rounding the graph asks for and drops only the
/// rounding to `from`. `from` and `to` must be float dtypes, `to` the wider.
Expected<std::unique_ptr<Graph>> widenGraph(const Graph &graph, DType from, DType to);

/// `tensors` with every tensor of dtype `from` converted to `to` (exactly,
/// when `to` is wider): bindings for the graph widenGraph returns.
NamedTensors widenTensors(const NamedTensors &tensors, DType from, DType to);

} // namespace kiln::ir
