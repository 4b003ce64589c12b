// Data-parallel gradients: each rank's gradients weighted by its share of the
// global batch and summed across the ranks with all_reduce, in buckets
// (docs/distributed.md, "Gradients in the training program").
#pragma once

#include "ir/graph/Graph.h"

#include <cstdint>
#include <span>
#include <vector>

namespace kiln::training {

/// Groups gradients into buckets, PyTorch DDP's way: in the order given (the
/// order the backward pass produces them), a bucket closes once it holds at
/// least its cap, the first bucket's cap being `firstBucketBytes` and every
/// later one's `bucketBytes`. A gradient larger than the cap is a bucket of
/// its own. Returns indices into `byteSizes`, every index exactly once.
std::vector<std::vector<size_t>> planGradientBuckets(std::span<const int64_t> byteSizes,
                                                     int64_t firstBucketBytes,
                                                     int64_t bucketBytes);

/// The gradients as the ranks' weighted sum: each gradient times `weight` (a
/// scalar of the gradients' dtype: this rank's rows / the global batch's
/// rows), then one all_reduce sum per bucket of planGradientBuckets over
/// `productionOrder` (indices into `grads`). A bucket of several gradients is
/// one flat concat, one all_reduce and a slice (and reshape) back per
/// gradient: the graph IR has no node with several results. Returns the
/// reduced gradients in the order of `grads`; `buckets` receives the plan.
Expected<std::vector<ir::Value *>> appendGradientAllReduce(
    ir::Graph &graph, std::span<ir::Value *const> grads, std::span<const size_t> productionOrder,
    ir::Value *weight, int64_t firstBucketBytes, int64_t bucketBytes,
    std::vector<std::vector<size_t>> &buckets);

} // namespace kiln::training
