// Reference scaled_dot_product_attention: softmax(q @ k^T * scale [+ causal
// mask]) @ v with the batch dims of q, k and v broadcast, computed row by row
// in fp64.
#include "ir/graph/Reference.h"
#include "ir/graph/reference/IndexMath.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::ir {

Expected<std::vector<double>> referenceAttention(const ReferenceContext &context) {
  const RefTensor &q = *context.operands[0];
  const RefTensor &k = *context.operands[1];
  const RefTensor &v = *context.operands[2];
  double scale = getFloat(context.attrs, "scale");
  bool causal = getBool(context.attrs, "causal");
  const Shape &result = context.resultType.shape;
  int64_t queries = q.type.shape[q.type.shape.size() - 2];
  int64_t depth = q.type.shape.back();
  int64_t keys = k.type.shape[k.type.shape.size() - 2];
  int64_t valueDepth = v.type.shape.back();

  Shape batch(result.begin(), result.end() - 2);
  auto batchStrides = [&](const RefTensor &t, int64_t matrixSize) {
    std::vector<int64_t> strides =
        reference::broadcastStrides(Shape(t.type.shape.begin(), t.type.shape.end() - 2), batch);
    for (int64_t &stride : strides)
      stride *= matrixSize;
    return strides;
  };
  // The optional mask, broadcast to the scores [batch..., Lq, Lk].
  const RefTensor *mask = context.operands.size() == 4 ? context.operands[3] : nullptr;
  bool boolMask = mask && mask->type.dtype == DType::Bool;
  std::vector<int64_t> maskBatchStrides(batch.size(), 0);
  int64_t maskRowStride = 0, maskColumnStride = 0;
  if (mask) {
    Shape scores = batch;
    scores.push_back(queries);
    scores.push_back(keys);
    std::vector<int64_t> strides = reference::broadcastStrides(mask->type.shape, scores);
    std::copy(strides.begin(), strides.end() - 2, maskBatchStrides.begin());
    maskRowStride = strides[strides.size() - 2];
    maskColumnStride = strides.back();
  }
  reference::StridedWalker<4> walker(batch, {batchStrides(q, queries * depth),
                                             batchStrides(k, keys * depth),
                                             batchStrides(v, keys * valueDepth),
                                             maskBatchStrides});

  std::vector<double> out(static_cast<size_t>(context.resultType.numElements()), 0.0);
  std::vector<double> scores(static_cast<size_t>(keys));
  std::vector<char> visible(static_cast<size_t>(keys));
  int64_t numBatches = TensorType{context.resultType.dtype, batch}.numElements();
  for (int64_t b = 0; b < numBatches; ++b) {
    const double *qm = q.data.data() + walker.offset(0);
    const double *km = k.data.data() + walker.offset(1);
    const double *vm = v.data.data() + walker.offset(2);
    const double *mm = mask ? mask->data.data() + walker.offset(3) : nullptr;
    double *om = out.data() + b * queries * valueDepth;
    for (int64_t i = 0; i < queries; ++i) {
      // The causal mask aligns the last query with the last key, so with Lq > Lk
      // the first rows see no key at all; a row that sees no key has a 0/0 = NaN
      // softmax, as in the decomposed form.
      int64_t causalLimit =
          causal ? std::min(keys, std::max<int64_t>(i + (keys - queries) + 1, 0)) : keys;
      double max = -std::numeric_limits<double>::infinity();
      int64_t seen = 0;
      for (int64_t j = 0; j < keys; ++j) {
        double maskValue = mm ? mm[i * maskRowStride + j * maskColumnStride] : 0.0;
        bool sees = j < causalLimit && (!boolMask || maskValue != 0.0);
        visible[static_cast<size_t>(j)] = sees;
        if (!sees)
          continue;
        ++seen;
        double dot = 0.0;
        for (int64_t d = 0; d < depth; ++d)
          dot += qm[i * depth + d] * km[j * depth + d];
        double score = dot * scale + (mask && !boolMask ? maskValue : 0.0);
        scores[static_cast<size_t>(j)] = score;
        max = std::isnan(max) || std::isnan(score) ? std::nan("") : std::max(max, score);
      }
      double *row = om + i * valueDepth;
      if (seen == 0) {
        for (int64_t e = 0; e < valueDepth; ++e)
          row[e] = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      double sum = 0.0;
      for (int64_t j = 0; j < keys; ++j)
        if (visible[static_cast<size_t>(j)]) {
          scores[static_cast<size_t>(j)] = std::exp(scores[static_cast<size_t>(j)] - max);
          sum += scores[static_cast<size_t>(j)];
        }
      for (int64_t j = 0; j < keys; ++j) {
        if (!visible[static_cast<size_t>(j)])
          continue;
        double weight = scores[static_cast<size_t>(j)] / sum;
        for (int64_t e = 0; e < valueDepth; ++e)
          row[e] += weight * vm[j * valueDepth + e];
      }
    }
    walker.next();
  }
  return out;
}

} // namespace kiln::ir
