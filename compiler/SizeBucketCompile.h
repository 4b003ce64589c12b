// Size buckets: one CPU compile of a graph with a size symbol, whose range is split into
// buckets that each get schedules of their own (docs/dynamic-shapes.md). Compiler-internal;
// kiln::compile calls it.
#pragma once

#include "codegen/Target.h"
#include "compiler/Compile.h"
#include "compiler/Pipeline.h"
#include "compiler/tuning/LazyFingerprint.h"
#include "ir/graph/Graph.h"

#include <optional>
#include <ostream>
#include <span>
#include <vector>

namespace kiln::compiler {

/// The upper bounds of `graph`'s size buckets, ascending, the symbol's maximum last:
/// `requested` checked against the symbol's range, or (nullopt) the least value, the powers
/// of two above it and the maximum. One bound (one bucket) for a static graph and for a
/// graph with several symbols; a list for one of those is an error.
Expected<std::vector<int64_t>>
sizeBucketBounds(const ir::Graph &graph, const std::optional<std::vector<int64_t>> &requested);

/// The graph of the bucket with upper bound `bound`: `graph` with its symbol in [min, bound]
/// (ir::narrowSymbols), specialized when `bound` is the least value. What the bucket is
/// compiled and tuned from.
Expected<std::unique_ptr<ir::Graph>> sizeBucketGraph(const ir::Graph &graph, int64_t bound);

/// The buckets of a graph with one size symbol, lowered (what a compile and a bundle both
/// generate code for).
struct LoweredSizeBuckets {
  struct Bucket {
    int64_t bound = 0;
    std::unique_ptr<ir::Graph> graph; ///< null for the largest: the user's graph
    LoweredProgram program;
  };
  /// The buckets kept, largest (the whole range) first; kernels named as in `kernels`.
  std::vector<Bucket> buckets;
  /// Every kept bucket's kernels, each distinct kernel once.
  std::vector<kir::Kernel> kernels;
};

/// compileSizeBuckets' buckets up to code generation, filling the report's counts, the
/// tuning line and `sizeBuckets`.
Expected<LoweredSizeBuckets> lowerSizeBuckets(const ir::Graph &graph,
                                              std::span<const int64_t> bounds,
                                              const CompileOptions &options,
                                              const codegen::CpuTarget &target,
                                              const LazyFingerprint &targetFingerprint,
                                              std::ostream &dump, CompileReport &report);

/// A host model of `graph` (its one symbol N in [min, max]) with a bucket per bound: the
/// bucket of bound b is `graph` with N in [min, b] (specialized when b is min), lowered with
/// the schedules its bound gets. The kernels of every bucket share one host module; a kernel
/// equal to one of a larger bucket but for its parameters' extents is that kernel (it reads
/// the sizes at run time, and the larger range holds the smaller), and a bucket left with
/// exactly the kernels of the next larger one is dropped (that one runs its sizes).
Expected<CompiledModel> compileSizeBuckets(const ir::Graph &graph, std::span<const int64_t> bounds,
                                           const CompileOptions &options,
                                           const codegen::CpuTarget &target,
                                           const LazyFingerprint &targetFingerprint,
                                           std::ostream &dump, CompileReport &report);

} // namespace kiln::compiler
