// The epilogue and kernel assembly shared by matmul and conv2d lowering.
#include "passes/lower/ContractionKernel.h"

#include "ir/kernel/Builder.h"

#include <algorithm>

namespace kiln::lower {

using namespace kir;

ContractionKernel::ContractionKernel(const passes::FusionGroup &group, RuntimeSizes *sizes)
    : group_(group), signature_(makeSignature(group)) {
  KILN_CHECK(group.anchor && group.root, "contraction group without an anchor");
  KILN_CHECK(group.root->type().shape == group.anchor->type().shape,
             "a contraction epilogue keeps the anchor's shape");
  emitter_ = std::make_unique<ElementEmitter>(group_, signature_.buffers);
  emitter_->setRuntimeSizes(sizes);
}

BufferPtr ContractionKernel::operandBuffer(size_t operand) const {
  auto it = signature_.buffers.find(group_.anchor->operand(operand));
  KILN_CHECK(it != signature_.buffers.end(), "a contraction operand is not a group input");
  return it->second;
}

bool ContractionKernel::plainResult(DType accumulate) const {
  return group_.root == group_.anchor && signature_.out->dtype == accumulate;
}

GemmStoreFn ContractionKernel::storeResult(RootIndexFn rootIndex, GemmOffsetFn outputOffset) {
  return [this, rootIndex = std::move(rootIndex), outputOffset = std::move(outputOffset)](
             std::span<const ExprPtr> bij, ExprPtr acc) -> Expected<StmtPtr> {
    // The anchor's value is the accumulator rounded to the anchor's dtype, as the reference
    // rounds every result; integer contractions return the accumulator itself.
    ExprPtr anchorValue = cast(acc, Type::scalar(group_.anchor->type().dtype));
    emitter_->overrideValue(group_.anchor->result(),
                            [anchorValue](std::span<const ExprPtr>) { return anchorValue; });
    std::vector<ExprPtr> index = rootIndex(bij);
    KILN_TRY(ExprPtr value, emitter_->at(group_.root->result(), index));
    return storeBound(signature_.out, outputOffset(bij[0], bij[1], bij[2]), value, names_);
  };
}

LoweredKernel ContractionKernel::finish(const GemmLowering &gemm) const {
  LoweredKernel lowered = finishKernel(group_, signature_, gemm.body);
  for (const BufferPtr &workspace : gemm.workspaces)
    lowered.kernel.params.push_back(workspace);
  lowered.numWorkspaces = static_cast<int>(gemm.workspaces.size());
  for (const auto &[suffix, body] : gemm.followUps) {
    kir::Kernel followUp;
    followUp.name = lowered.kernel.name + "_" + suffix;
    followUp.params = lowered.kernel.params;
    followUp.body = body;
    lowered.followUps.push_back(std::move(followUp));
  }
  if (gemm.prelude) {
    kir::Kernel prelude;
    prelude.name = lowered.kernel.name + "_pack_b";
    prelude.params = lowered.kernel.params;
    prelude.body = gemm.prelude;
    lowered.prelude = std::move(prelude);
    const ir::Value *weight = anchor().operand(1);
    auto input = std::ranges::find(group_.inputs, weight);
    KILN_CHECK(input != group_.inputs.end(), "a contraction's operands are group inputs");
    lowered.preludeInput = static_cast<int>(input - group_.inputs.begin());
    lowered.preludeWorkspace = 0; // GemmLowering::prelude writes workspaces[0]
  }
  return lowered;
}

} // namespace kiln::lower
