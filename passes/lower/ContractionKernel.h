// What matmul and conv2d lowering share around the GEMM template: the kernel's buffers, the
// fused epilogue (the anchor's value replaced by the finished accumulator, then the group's
// element function at the root), and the LoweredKernel with the template's workspaces.
#pragma once

#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/ElementEmitter.h"
#include "passes/lower/GemmTemplate.h"
#include "passes/lower/Lower.h"
#include "passes/lower/LowerUtil.h"

#include <functional>
#include <memory>
#include <vector>

namespace kiln::lower {

/// The root's index (one expression per axis) of GEMM output element (b, i, j).
using RootIndexFn = std::function<std::vector<kir::ExprPtr>(std::span<const kir::ExprPtr> bij)>;

/// One contraction group being lowered. Not copyable: the emitter points into it.
class ContractionKernel {
public:
  /// `sizes`: where the epilogue reads the run's sizes (a symbolic graph's kernels).
  explicit ContractionKernel(const passes::FusionGroup &group, RuntimeSizes *sizes = nullptr);
  ContractionKernel(const ContractionKernel &) = delete;
  ContractionKernel &operator=(const ContractionKernel &) = delete;

  const ir::Node &anchor() const { return *group_.anchor; }
  /// The buffer of one of the anchor's operands (always a group input: contractions take
  /// no prologue).
  kir::BufferPtr operandBuffer(size_t operand) const;
  kir::BufferPtr output() const { return signature_.out; }
  /// Whether the result is the accumulator itself: no epilogue and the output holds the
  /// accumulate dtype, so the template may store registers directly and keep partial sums in
  /// the output.
  bool plainResult(DType accumulate) const;

  /// The template's final store: the epilogue at the root's index, stored at `outputOffset`.
  GemmStoreFn storeResult(RootIndexFn rootIndex, GemmOffsetFn outputOffset);

  /// The kernel: the group's inputs, the output, then the template's workspaces.
  LoweredKernel finish(const GemmLowering &gemm) const;

private:
  const passes::FusionGroup &group_;
  KernelSignature signature_;
  std::unique_ptr<ElementEmitter> emitter_;
  VarNames names_;
};

} // namespace kiln::lower
