// Reference normalizations: softmax and log_softmax along one axis,
// layer_norm over the trailing axes [axis, rank), and inference batch_norm
// per channel. Each is computed directly from its definition in fp64 (max
// subtracted for softmax, two-pass mean and variance), not through the
// decomposition, so the decomposition can be tested against it.
#include "ir/graph/Reference.h"
#include "ir/graph/reference/IndexMath.h"

#include <cmath>
#include <limits>

namespace kiln::ir {
namespace {

/// Shared body of softmax and log_softmax: for every row along `axis`,
/// computes max and sum(exp(x - max)), then writes the chosen form.
std::vector<double> softmaxAlongAxis(const ReferenceContext &context, bool logarithm) {
  const RefTensor &x = *context.operands[0];
  int64_t axis = reference::wrapAxis(getInt(context.attrs, "axis"), x.type.rank());
  reference::AxisSplit split = reference::splitAround(x.type.shape, axis);
  std::vector<double> result(x.data.size());
  for (int64_t outer = 0; outer < split.outer; ++outer) {
    for (int64_t inner = 0; inner < split.inner; ++inner) {
      int64_t base = outer * split.size * split.inner + inner;
      auto at = [&](int64_t i) { return static_cast<size_t>(base + i * split.inner); };
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < split.size; ++i)
        max = std::isnan(max) || std::isnan(x.data[at(i)]) ? std::nan("")
                                                           : std::max(max, x.data[at(i)]);
      double sum = 0.0;
      for (int64_t i = 0; i < split.size; ++i)
        sum += std::exp(x.data[at(i)] - max);
      double logSum = std::log(sum);
      for (int64_t i = 0; i < split.size; ++i)
        result[at(i)] =
            logarithm ? x.data[at(i)] - max - logSum : std::exp(x.data[at(i)] - max) / sum;
    }
  }
  return result;
}

} // namespace

Expected<std::vector<double>> referenceSoftmax(const ReferenceContext &context) {
  return softmaxAlongAxis(context, /*logarithm=*/false);
}

Expected<std::vector<double>> referenceLogSoftmax(const ReferenceContext &context) {
  return softmaxAlongAxis(context, /*logarithm=*/true);
}

Expected<std::vector<double>> referenceLayerNorm(const ReferenceContext &context) {
  const RefTensor &x = *context.operands[0];
  const RefTensor &scale = *context.operands[1];
  const RefTensor &bias = *context.operands[2];
  int64_t axis = reference::wrapAxis(getInt(context.attrs, "axis"), x.type.rank());
  double epsilon = getFloat(context.attrs, "epsilon");
  // scale and bias have shape x[axis:], so they index like one row.
  reference::AxisSplit split = reference::splitAround(x.type.shape, axis);
  int64_t rowSize = split.size * split.inner;
  int64_t rows = split.outer;
  std::vector<double> result(x.data.size());
  for (int64_t row = 0; row < rows; ++row) {
    const double *in = x.data.data() + row * rowSize;
    double *out = result.data() + row * rowSize;
    double mean = 0.0;
    for (int64_t i = 0; i < rowSize; ++i)
      mean += in[i];
    mean /= static_cast<double>(rowSize);
    double variance = 0.0;
    for (int64_t i = 0; i < rowSize; ++i)
      variance += (in[i] - mean) * (in[i] - mean);
    variance /= static_cast<double>(rowSize);
    double inverse = 1.0 / std::sqrt(variance + epsilon);
    for (int64_t i = 0; i < rowSize; ++i)
      out[i] = (in[i] - mean) * inverse * scale.data[static_cast<size_t>(i)] +
               bias.data[static_cast<size_t>(i)];
  }
  return result;
}

Expected<std::vector<double>> referenceBatchNorm(const ReferenceContext &context) {
  const RefTensor &x = *context.operands[0];
  const RefTensor &scale = *context.operands[1];
  const RefTensor &bias = *context.operands[2];
  const RefTensor &mean = *context.operands[3];
  const RefTensor &variance = *context.operands[4];
  int64_t axis = reference::wrapAxis(getInt(context.attrs, "axis"), x.type.rank());
  double epsilon = getFloat(context.attrs, "epsilon");
  reference::AxisSplit split = reference::splitAround(x.type.shape, axis);
  std::vector<double> result(x.data.size());
  for (int64_t c = 0; c < split.size; ++c) {
    size_t channel = static_cast<size_t>(c);
    double multiplier = scale.data[channel] / std::sqrt(variance.data[channel] + epsilon);
    double shift = bias.data[channel];
    double center = mean.data[channel];
    for (int64_t outer = 0; outer < split.outer; ++outer) {
      int64_t base = (outer * split.size + c) * split.inner;
      for (int64_t inner = 0; inner < split.inner; ++inner) {
        size_t i = static_cast<size_t>(base + inner);
        result[i] = (x.data[i] - center) * multiplier + shift;
      }
    }
  }
  return result;
}

} // namespace kiln::ir
