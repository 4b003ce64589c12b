// Buckets of gradients, each one all_reduce: DDP's bucketing as graph IR.
#include "compiler/training/GradientAllReduce.h"

#include "compiler/training/IrBuilder.h"

namespace kiln::training {

using ir::OpKind;
using ir::Value;

std::vector<std::vector<size_t>> planGradientBuckets(std::span<const int64_t> byteSizes,
                                                     int64_t firstBucketBytes,
                                                     int64_t bucketBytes) {
  std::vector<std::vector<size_t>> buckets;
  std::vector<size_t> current;
  int64_t filled = 0;
  for (size_t i = 0; i < byteSizes.size(); ++i) {
    current.push_back(i);
    filled += byteSizes[i];
    if (filled >= (buckets.empty() ? firstBucketBytes : bucketBytes)) {
      buckets.push_back(std::move(current));
      current.clear();
      filled = 0;
    }
  }
  if (!current.empty())
    buckets.push_back(std::move(current));
  return buckets;
}

namespace {

/// all_reduce(sum) of one bucket: the gradient itself, or a flat concat of
/// several and slices back to each one's shape.
Expected<std::vector<Value *>> reduceBucket(IrBuilder &b, const std::vector<Value *> &weighted) {
  auto allReduce = [&](Value *x) {
    return b.op(OpKind::AllReduce, {x}, {{"op", std::string("sum")}});
  };
  if (weighted.size() == 1) {
    KILN_TRY(Value * reduced, allReduce(weighted[0]));
    return std::vector<Value *>{reduced};
  }
  std::vector<Value *> flat;
  for (Value *grad : weighted) {
    if (grad->type().rank() != 1) {
      KILN_TRY(grad, b.op(OpKind::Reshape, {grad},
                          {{"shape", ir::Shape{grad->type().numElements()}}}));
    }
    flat.push_back(grad);
  }
  KILN_TRY(Value * joined, b.op(OpKind::Concat, flat, {{"axis", int64_t{0}}}));
  KILN_TRY(Value * reduced, allReduce(joined));
  std::vector<Value *> parts;
  int64_t start = 0;
  for (Value *grad : weighted) {
    int64_t stop = start + grad->type().numElements();
    KILN_TRY(Value * part, b.op(OpKind::Slice, {reduced},
                                {{"starts", std::vector<int64_t>{start}},
                                 {"steps", std::vector<int64_t>{1}},
                                 {"stops", std::vector<int64_t>{stop}}}));
    if (grad->type().rank() != 1) {
      KILN_TRY(part, b.op(OpKind::Reshape, {part}, {{"shape", grad->type().shape}}));
    }
    parts.push_back(part);
    start = stop;
  }
  return parts;
}

} // namespace

Expected<std::vector<Value *>> appendGradientAllReduce(
    ir::Graph &graph, std::span<Value *const> grads, std::span<const size_t> productionOrder,
    Value *weight, int64_t firstBucketBytes, int64_t bucketBytes,
    std::vector<std::vector<size_t>> &buckets) {
  KILN_CHECK(productionOrder.size() == grads.size(), "one production position per gradient");
  std::vector<int64_t> sizes;
  for (size_t index : productionOrder) {
    const ir::TensorType &type = grads[index]->type();
    sizes.push_back(type.numElements() * static_cast<int64_t>(dtypeByteSize(type.dtype)));
  }
  buckets = planGradientBuckets(sizes, firstBucketBytes, bucketBytes);
  for (std::vector<size_t> &bucket : buckets)
    for (size_t &position : bucket)
      position = productionOrder[position];

  IrBuilder b(graph);
  std::vector<Value *> reduced(grads.size(), nullptr);
  for (const std::vector<size_t> &bucket : buckets) {
    std::vector<Value *> weighted;
    for (size_t index : bucket) {
      KILN_TRY(Value * scaled, b.mul(grads[index], weight));
      weighted.push_back(scaled);
    }
    KILN_TRY(std::vector<Value *> sums, reduceBucket(b, weighted));
    for (size_t i = 0; i < bucket.size(); ++i)
      reduced[bucket[i]] = sums[i];
  }
  return reduced;
}

} // namespace kiln::training
