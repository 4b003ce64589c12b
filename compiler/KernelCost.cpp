// Counting a kernel's work: one function per op category, chosen through the
// op table so a new op is counted by its category's rule without an edit here.
#include "compiler/KernelCost.h"

#include "support/DType.h"
#include "support/Error.h"

#include <fmt/format.h>

namespace kiln::compiler {

namespace {

/// Every contraction needs its own formula: there is no per-element default
/// for them, so a new contraction op must add one to flopRuleOf.
constexpr bool everyOpHasAFlopRule() {
#define KILN_OP(Enum, name, Category, ...)                                                         \
  if (!flopRuleOf(ir::OpKind::Enum, ir::OpCategory::Category))                                     \
    return false;
#include "ir/graph/Ops.def"
#undef KILN_OP
  return true;
}
static_assert(everyOpHasAFlopRule(),
              "an op in Ops.def has no FLOP rule: give its contraction a formula in flopRuleOf");

int64_t numElements(const ir::Value *value) { return value->type().numElements(); }

int64_t rowNormalizationFlopsPerElement(ir::OpKind kind) {
  switch (kind) {
  case ir::OpKind::Softmax: return kSoftmaxFlopsPerElement;
  case ir::OpKind::LogSoftmax: return kLogSoftmaxFlopsPerElement;
  case ir::OpKind::LayerNorm: return kLayerNormFlopsPerElement;
  default: break;
  }
  KILN_UNREACHABLE(fmt::format("{} is not a row normalization", ir::opName(kind)));
}

int64_t matMulFlops(const ir::Node &node) {
  const ir::TensorType &a = node.operand(0)->type();
  bool transposeA = ir::getBool(node.attrs(), "transpose_a");
  int64_t k = a.shape[a.rank() - (transposeA ? 2 : 1)];
  // The result holds batch * M * N elements, each a K-long dot product.
  return 2 * node.type().numElements() * k;
}

int64_t conv2DFlops(const ir::Node &node) {
  const ir::TensorType &filter = node.operand(1)->type();
  // Both filter layouts ([O, I/g, KH, KW] and [O, KH, KW, I/g]) hold
  // (IC / groups) * KH * KW weights per output channel.
  int64_t outChannels = filter.shape[0];
  int64_t macsPerOutput = outChannels == 0 ? 0 : filter.numElements() / outChannels;
  return 2 * node.type().numElements() * macsPerOutput;
}

int64_t attentionFlops(const ir::Node &node) {
  // q [..., Lq, D], k [..., Lk, D], v [..., Lk, Dv] -> [..., Lq, Dv]. Causal
  // masking is not subtracted: the kernels compute every score.
  const ir::TensorType &query = node.operand(0)->type();
  const ir::TensorType &key = node.operand(1)->type();
  const ir::TensorType &result = node.type();
  int64_t depth = query.shape.back();
  int64_t keys = key.shape[key.rank() - 2];
  int64_t valueDepth = result.shape.back();
  int64_t queryRows = valueDepth == 0 ? 0 : result.numElements() / valueDepth;
  int64_t scores = queryRows * keys;
  return scores * (2 * depth + 2 * valueDepth + kAttentionFlopsPerScore);
}

int64_t poolingWindowFlops(const ir::Node &node) {
  // Padded window positions are counted too: the kernel visits them.
  const std::vector<int64_t> &window = ir::getInts(node.attrs(), "kernel");
  return node.type().numElements() * window[0] * window[1];
}

} // namespace

std::optional<FlopRule> flopRuleOf(ir::OpKind kind) {
  return flopRuleOf(kind, ir::opInfo(kind).category);
}

int64_t flopsOfElementwise(const ir::Node &node) {
  if (*flopRuleOf(node.kind()) == FlopRule::BatchNorm)
    return kBatchNormFlopsPerElement * node.type().numElements();
  return node.type().numElements();
}

int64_t flopsOfReduction(const ir::Node &node) {
  switch (*flopRuleOf(node.kind())) {
  case FlopRule::PoolingWindow: return poolingWindowFlops(node);
  case FlopRule::RowNormalization:
    return rowNormalizationFlopsPerElement(node.kind()) * node.type().numElements();
  default: return numElements(node.operand(0));
  }
}

int64_t flopsOfContraction(const ir::Node &node) {
  switch (*flopRuleOf(node.kind())) {
  case FlopRule::MatMul: return matMulFlops(node);
  case FlopRule::Conv2D: return conv2DFlops(node);
  case FlopRule::Attention: return attentionFlops(node);
  default: break;
  }
  KILN_UNREACHABLE(fmt::format("contraction {} has no FLOP formula", node.name()));
}

int64_t flopsOfDataMovement(const ir::Node &) { return 0; }

int64_t nodeFlops(const ir::Node &node) {
  switch (node.info().category) {
  case ir::OpCategory::Elementwise: return flopsOfElementwise(node);
  case ir::OpCategory::Reduction: return flopsOfReduction(node);
  case ir::OpCategory::Contraction: return flopsOfContraction(node);
  case ir::OpCategory::DataMovement: return flopsOfDataMovement(node);
  case ir::OpCategory::Collective: return 0; // communication, not arithmetic
  }
  KILN_UNREACHABLE("unknown op category");
}

int64_t groupFlops(const passes::FusionGroup &group) {
  int64_t flops = 0;
  for (const ir::Node *node : group.nodes)
    flops += nodeFlops(*node);
  return flops;
}

int64_t kernelBytesMoved(const kir::Kernel &kernel) {
  int64_t bytes = 0;
  for (const kir::BufferPtr &param : kernel.params)
    bytes += param->size * dtypeByteSize(param->dtype);
  return bytes;
}

} // namespace kiln::compiler
