// Bulk tensor copies (cp.async.bulk.tensor) and mbarriers for NVPTX, as the inline PTX of
// codegen/PtxInstructions.h (sm_90 and later).
// Barriers and destinations are 32-bit shared addresses; a copy names its tensor map by the
// generic address of its grid-constant parameter.
#include "codegen/llvm/NvptxEmitter.h"

#include "ir/kernel/TensorMap.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <llvm/IR/InlineAsm.h>

namespace kiln::codegen::nvptx {

Expected<llvm::Value *> NvptxEmitter::sharedAddress(const kir::Buffer &buffer,
                                                    const kir::Expr &index) {
  KILN_CHECK(buffer.scope == kir::MemScope::Shared,
             "the verifier admits mbarriers and bulk copies of shared buffers only");
  KILN_TRY(llvm::Value * pointer, elementPointer(buffer, index));
  return builder_.CreatePtrToInt(pointer, builder_.getInt32Ty());
}

Expected<void> NvptxEmitter::emitMbarrier(const kir::Mbarrier &barrier) {
  InlinePtx instruction = mbarrier(barrier.op);
  KILN_TRY_VOID(require(instruction,
                                   fmt::format("mbarrier_{} on {}", kir::mbarrierOpName(barrier.op),
                                               barrier.barriers->name)));
  KILN_TRY(llvm::Value * address, sharedAddress(*barrier.barriers, *barrier.index));
  switch (barrier.op) {
  case kir::MbarrierOp::Init:
  case kir::MbarrierOp::ArriveExpectTx:
    emitAsm(instruction, {address, builder_.getInt32(static_cast<uint32_t>(barrier.count))});
    return {};
  case kir::MbarrierOp::Arrive:
    emitAsm(instruction, {address});
    return {};
  case kir::MbarrierOp::Wait: {
    KILN_TRY(llvm::Value * parity, emitExpr(*barrier.parity));
    emitAsm(instruction, {address, builder_.CreateTrunc(parity, builder_.getInt32Ty())});
    return {};
  }
  }
  KILN_UNREACHABLE("mbarrier op");
}

Expected<void> NvptxEmitter::emitTmaLoad(const kir::TmaLoad &copy) {
  InlinePtx instruction = bulkTensorLoad(static_cast<int>(copy.coords.size()));
  KILN_TRY_VOID(require(instruction,
                                   fmt::format("bulk tensor copy through {}", copy.map->name)));
  auto map = tensorMaps_.find(copy.map.get());
  KILN_CHECK(map != tensorMaps_.end(), "the verifier admits tensor maps of parameters only");
  KILN_TRY(llvm::Value * destination, sharedAddress(*copy.destination, *copy.destinationIndex));
  KILN_TRY(llvm::Value * barrier, sharedAddress(*copy.barriers, *copy.barrierIndex));
  std::vector<llvm::Value *> operands{destination,
                                      builder_.CreatePtrToInt(map->second, builder_.getInt64Ty())};
  for (const kir::ExprPtr &coord : copy.coords) {
    KILN_TRY(llvm::Value * value, emitExpr(*coord));
    operands.push_back(builder_.CreateTrunc(value, builder_.getInt32Ty()));
  }
  operands.push_back(barrier);
  emitAsm(instruction, operands);
  return {};
}

} // namespace kiln::codegen::nvptx
