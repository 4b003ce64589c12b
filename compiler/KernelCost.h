// The work of one kernel launch, counted from the IR for the profiler:
// arithmetic operations from the fusion group's graph ops, bytes from the kernel's buffers.
#pragma once

#include "ir/graph/Graph.h"
#include "ir/graph/OpTable.h"
#include "ir/kernel/KernelIR.h"
#include "passes/graph/Fusion.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln::compiler {

/// How an op's arithmetic is counted. Every count is of operations whatever
/// the dtype (an integer add counts like a float add), and an FMA counts 2.
enum class FlopRule {
  PerOutputElement, ///< elementwise: one per result element; exp, tanh, erf... count 1 too
  PerInputElement,  ///< reductions: one per element read (the combine), argmax/argmin alike
  PoolingWindow,    ///< max/avg pooling: one per window element per result element
  RowNormalization, ///< softmax, log_softmax, layer_norm: a stated constant per element
  BatchNorm,        ///< inference batch norm: a stated constant per element
  MatMul,           ///< 2 * batch * M * N * K
  Conv2D,           ///< 2 * N * OH * OW * OC * (IC / groups) * KH * KW
  Attention,        ///< two matmuls plus a scaled softmax over the scores
  Free,             ///< data movement: no arithmetic
};

/// Operations per element of the row-normalization ops (see flopsOfReduction):
/// softmax is max, subtract, exp, sum, divide; log_softmax is max, subtract,
/// exp, sum, subtract (the per-row log is negligible); layer_norm is sum for
/// the mean, subtract, square, sum for the variance, scale by the inverse
/// deviation, multiply by scale, add bias.
inline constexpr int64_t kSoftmaxFlopsPerElement = 5;
inline constexpr int64_t kLogSoftmaxFlopsPerElement = 5;
inline constexpr int64_t kLayerNormFlopsPerElement = 7;
/// Inference batch norm per element: subtract mean, scale by the inverse
/// deviation, multiply by scale, add bias (the per-channel rsqrt is negligible).
inline constexpr int64_t kBatchNormFlopsPerElement = 4;
/// Per attention score besides the two matmuls: the scale and a softmax.
inline constexpr int64_t kAttentionFlopsPerScore = 1 + kSoftmaxFlopsPerElement;

/// The rule for `kind`: chosen by the op table's category, except for the ops
/// whose work is not one per element (pooling, the row normalizations, batch
/// norm) and the contractions, each of which needs its own formula. nullopt
/// only for a contraction with no formula, which a static_assert in
/// KernelCost.cpp forbids.
constexpr std::optional<FlopRule> flopRuleOf(ir::OpKind kind, ir::OpCategory category) {
  using ir::OpKind;
  switch (kind) {
  case OpKind::MaxPool2D:
  case OpKind::AvgPool2D: return FlopRule::PoolingWindow;
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
  case OpKind::LayerNorm: return FlopRule::RowNormalization;
  case OpKind::BatchNorm: return FlopRule::BatchNorm;
  case OpKind::MatMul: return FlopRule::MatMul;
  case OpKind::Conv2D: return FlopRule::Conv2D;
  case OpKind::ScaledDotProductAttention: return FlopRule::Attention;
  default: break;
  }
  switch (category) {
  case ir::OpCategory::Elementwise: return FlopRule::PerOutputElement;
  case ir::OpCategory::Reduction: return FlopRule::PerInputElement;
  case ir::OpCategory::DataMovement:
  case ir::OpCategory::Collective: return FlopRule::Free;
  case ir::OpCategory::Contraction: return std::nullopt;
  }
  return std::nullopt;
}

/// flopRuleOf for a node's op.
std::optional<FlopRule> flopRuleOf(ir::OpKind kind);

/// The arithmetic of one node, by its category's function below.
int64_t nodeFlops(const ir::Node &node);
int64_t flopsOfElementwise(const ir::Node &node);
int64_t flopsOfReduction(const ir::Node &node);
int64_t flopsOfContraction(const ir::Node &node);
int64_t flopsOfDataMovement(const ir::Node &node);

/// The arithmetic of a fusion group's kernel: the sum over its nodes. A group
/// becomes one kernel, so the count is that kernel's; should a group ever
/// launch several (a split-K pass and its reduction), the group's count
/// belongs to the kernel that does the contraction.
int64_t groupFlops(const passes::FusionGroup &group);

/// The ideal global-memory traffic of one launch: every buffer parameter
/// (inputs, output and workspaces) read or written once, in bytes.
int64_t kernelBytesMoved(const kir::Kernel &kernel);

} // namespace kiln::compiler
