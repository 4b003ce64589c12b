// Bulk tensor copies (cp.async.bulk.tensor) and mbarriers for NVPTX, as inline PTX for sm_90
// and later (the same instructions as the CUDA C backend's, codegen/cuda/CudaTma.cpp).
// Barriers and destinations are 32-bit shared addresses; a copy names its tensor map by the
// generic address of its grid-constant parameter.
#include "codegen/llvm/NvptxEmitter.h"

#include "ir/kernel/TensorMap.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <llvm/IR/InlineAsm.h>

namespace kiln::codegen::nvptx {

namespace {

/// A call of side-effecting, convergent inline asm on `operands` (constraints as given).
void callAsm(llvm::IRBuilder<> &builder, const std::string &text, const std::string &constraints,
             const std::vector<llvm::Value *> &operands) {
  std::vector<llvm::Type *> types;
  for (llvm::Value *operand : operands)
    types.push_back(operand->getType());
  auto *type = llvm::FunctionType::get(builder.getVoidTy(), types, false);
  builder.CreateCall(type, llvm::InlineAsm::get(type, text, constraints, true), operands)
      ->addFnAttr(llvm::Attribute::Convergent);
}

} // namespace

Expected<llvm::Value *> NvptxEmitter::sharedAddress(const kir::Buffer &buffer,
                                                    const kir::Expr &index) {
  KILN_CHECK(buffer.scope == kir::MemScope::Shared,
             "the verifier admits mbarriers and bulk copies of shared buffers only");
  KILN_TRY(llvm::Value * pointer, elementPointer(buffer, index));
  return builder_.CreatePtrToInt(pointer, builder_.getInt32Ty());
}

Expected<void> NvptxEmitter::emitMbarrier(const kir::Mbarrier &barrier) {
  KILN_TRY_VOID(requireSm(90, fmt::format("mbarrier_{} on {}", kir::mbarrierOpName(barrier.op),
                                          barrier.barriers->name)));
  KILN_TRY(llvm::Value * address, sharedAddress(*barrier.barriers, *barrier.index));
  llvm::Value *count = builder_.getInt32(static_cast<uint32_t>(barrier.count));
  switch (barrier.op) {
  case kir::MbarrierOp::Init:
    callAsm(builder_,
            "mbarrier.init.shared::cta.b64 [$0], $1;\nfence.mbarrier_init.release.cluster;",
            "r,r,~{memory}", {address, count});
    return {};
  case kir::MbarrierOp::Arrive:
    callAsm(builder_,
            "{\n.reg .b64 kiln_state;\nmbarrier.arrive.shared::cta.b64 kiln_state, [$0];\n}",
            "r,~{memory}", {address});
    return {};
  case kir::MbarrierOp::ArriveExpectTx:
    callAsm(builder_,
            "{\n.reg .b64 kiln_state;\nmbarrier.arrive.expect_tx.shared::cta.b64 kiln_state, "
            "[$0], $1;\n}",
            "r,r,~{memory}", {address, count});
    return {};
  case kir::MbarrierOp::Wait: {
    KILN_TRY(llvm::Value * parity, emitExpr(*barrier.parity));
    llvm::Value *parity32 = builder_.CreateTrunc(parity, builder_.getInt32Ty());
    callAsm(builder_,
            "{\n.reg .pred kiln_done;\nkiln_wait:\nmbarrier.try_wait.parity.shared::cta.b64 "
            "kiln_done, [$0], $1;\n@!kiln_done bra kiln_wait;\n}",
            "r,r,~{memory}", {address, parity32});
    return {};
  }
  }
  KILN_UNREACHABLE("mbarrier op");
}

Expected<void> NvptxEmitter::emitTmaLoad(const kir::TmaLoad &copy) {
  std::string name = fmt::format("bulk tensor copy through {}", copy.map->name);
  KILN_TRY_VOID(requireSm(90, name + " (cp.async.bulk.tensor)"));
  auto map = tensorMaps_.find(copy.map.get());
  KILN_CHECK(map != tensorMaps_.end(), "the verifier admits tensor maps of parameters only");
  KILN_TRY(llvm::Value * destination, sharedAddress(*copy.destination, *copy.destinationIndex));
  KILN_TRY(llvm::Value * barrier, sharedAddress(*copy.barriers, *copy.barrierIndex));
  const int rank = static_cast<int>(copy.coords.size());
  std::vector<llvm::Value *> operands{destination,
                                      builder_.CreatePtrToInt(map->second, builder_.getInt64Ty())};
  std::vector<std::string> coordNames, constraints{"r", "l"};
  for (int d = 0; d < rank; ++d) {
    KILN_TRY(llvm::Value * coord, emitExpr(*copy.coords[static_cast<size_t>(d)]));
    operands.push_back(builder_.CreateTrunc(coord, builder_.getInt32Ty()));
    coordNames.push_back(fmt::format("${}", d + 2));
    constraints.push_back("r");
  }
  operands.push_back(barrier);
  constraints.push_back("r");
  constraints.push_back("~{memory}");
  callAsm(builder_,
          fmt::format("cp.async.bulk.tensor.{}d.shared::cluster.global.tile.mbarrier::"
                      "complete_tx::bytes [$0], [$1, {{{}}}], [${}];",
                      rank, fmt::join(coordNames, ", "), rank + 2),
          fmt::format("{}", fmt::join(constraints, ",")), operands);
  return {};
}

} // namespace kiln::codegen::nvptx
