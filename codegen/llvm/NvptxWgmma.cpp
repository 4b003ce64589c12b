// Warpgroup products (wgmma.mma_async) and their ordering statements for NVPTX, as inline PTX
// (LLVM 19 has no wgmma intrinsics), sm_90a only. Operands are matrix descriptors built from
// the shared address of each operand's first element; accumulators are tied asm operands, and
// every wait passes them through an empty asm so that no read moves above the wait.
#include "codegen/llvm/NvptxEmitter.h"

#include "ir/kernel/WgmmaLayout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <llvm/IR/InlineAsm.h>

#include <algorithm>

namespace kiln::codegen::nvptx {

Expected<void> NvptxEmitter::requireWgmma(std::string_view what) {
  if (gpu_.sm == 90 && gpu_.archSpecific)
    return {};
  return fail(ErrorCode::Unsupported,
              fmt::format("{} needs sm_90a (wgmma exists only there); the target is {}", what,
                          gpu_.archName()));
}

Expected<llvm::Value *> NvptxEmitter::wgmmaDescriptor(const kir::SharedMatrix &matrix) {
  KILN_TRY(llvm::Value * first, elementPointer(*matrix.buffer, *matrix.start));
  // The strides and the swizzle are constants; only the start address varies.
  uint64_t fixed = kir::encodeWgmmaDescriptor({0, static_cast<uint32_t>(matrix.leadingBytes),
                                               static_cast<uint32_t>(matrix.strideBytes), 0, 1});
  llvm::Value *address = builder_.CreatePtrToInt(first, builder_.getInt32Ty());
  llvm::Value *field = builder_.CreateLShr(builder_.CreateAnd(address, 0x3FFFF), 4);
  return builder_.CreateOr(builder_.CreateZExt(field, builder_.getInt64Ty()),
                           builder_.getInt64(fixed));
}

Expected<void> NvptxEmitter::emitWgmma(const kir::Wgmma &product) {
  std::string shape = kir::wgmmaPtxShape(product.wgmmaKind, product.n);
  std::string name = "wgmma." + shape;
  KILN_TRY_VOID(requireWgmma(name));
  int nd = product.n / 2;
  std::vector<llvm::Value *> dPointers;
  for (int i = 0; i < nd; ++i) {
    KILN_TRY(llvm::Value * pointer, fragmentElement(product.d, DType::F32, nd, i, name + " d"));
    dPointers.push_back(pointer);
  }
  KILN_TRY(llvm::Value * aDescriptor, wgmmaDescriptor(product.a));
  KILN_TRY(llvm::Value * bDescriptor, wgmmaDescriptor(product.b));
  if (std::ranges::find(wgmmaAccumulators_, product.d.buffer.get()) == wgmmaAccumulators_.end())
    wgmmaAccumulators_.push_back(product.d.buffer.get());

  llvm::Type *f32 = builder_.getFloatTy();
  std::vector<llvm::Value *> operands{aDescriptor, bDescriptor,
                                      builder_.getInt32(product.accumulate ? 1 : 0)};
  std::vector<std::string> dNames, constraints;
  for (int i = 0; i < nd; ++i) {
    dNames.push_back(fmt::format("${}", i));
    constraints.push_back("=f");
  }
  constraints.insert(constraints.end(), {"l", "l", "r"});
  if (product.accumulate)
    for (int i = 0; i < nd; ++i) {
      operands.push_back(builder_.CreateLoad(f32, dPointers[static_cast<size_t>(i)]));
      constraints.push_back(std::to_string(i)); // tied to output i
    }
  constraints.push_back("~{memory}");
  std::string transposes;
  if (kir::wgmmaShapeInfo(product.wgmmaKind).mnMajorAllowed)
    transposes = fmt::format(", {}, {}", product.a.mnMajor ? 1 : 0, product.b.mnMajor ? 1 : 0);
  std::string text = fmt::format(
      "{{\n.reg .pred kiln_p;\nsetp.ne.b32 kiln_p, ${}, 0;\nwgmma.mma_async.sync.aligned.{} "
      "{{{}}}, ${}, ${}, kiln_p, 1, 1{};\n}}",
      nd + 2, shape, fmt::join(dNames, ", "), nd, nd + 1, transposes);
  std::vector<llvm::Type *> resultTypes(static_cast<size_t>(nd), f32);
  auto *resultType = llvm::StructType::get(context_, resultTypes);
  std::vector<llvm::Type *> operandTypes;
  for (llvm::Value *operand : operands)
    operandTypes.push_back(operand->getType());
  auto *asmType = llvm::FunctionType::get(resultType, operandTypes, false);
  std::string constraintText = fmt::format("{}", fmt::join(constraints, ","));
  auto *instruction = llvm::InlineAsm::get(asmType, text, constraintText, /*hasSideEffects=*/true);
  llvm::CallInst *call = builder_.CreateCall(asmType, instruction, operands);
  call->addFnAttr(llvm::Attribute::Convergent);
  for (int i = 0; i < nd; ++i)
    builder_.CreateStore(builder_.CreateExtractValue(call, static_cast<unsigned>(i)),
                         dPointers[static_cast<size_t>(i)]);
  return {};
}

Expected<void> NvptxEmitter::emitWgmmaSync(const kir::WgmmaSync &sync) {
  std::string name = fmt::format("wgmma {}", kir::wgmmaSyncOpName(sync.op));
  KILN_TRY_VOID(requireWgmma(name));
  std::string text;
  switch (sync.op) {
  case kir::WgmmaSyncOp::Fence: text = "wgmma.fence.sync.aligned;"; break;
  case kir::WgmmaSyncOp::SharedFence: text = "fence.proxy.async.shared::cta;"; break;
  case kir::WgmmaSyncOp::Commit: text = "wgmma.commit_group.sync.aligned;"; break;
  case kir::WgmmaSyncOp::Wait:
    text = fmt::format("wgmma.wait_group.sync.aligned {};", sync.pendingGroups);
    break;
  }
  auto *voidAsm = llvm::FunctionType::get(builder_.getVoidTy(), false);
  builder_.CreateCall(voidAsm, llvm::InlineAsm::get(voidAsm, text, "~{memory}", true))
      ->addFnAttr(llvm::Attribute::Convergent);
  if (sync.op != kir::WgmmaSyncOp::Wait)
    return {};
  // The accumulators change at the wait, not at the product: an empty asm that "rewrites"
  // each one keeps their reads below it.
  llvm::Type *f32 = builder_.getFloatTy();
  for (const kir::Buffer *buffer : wgmmaAccumulators_) {
    auto found = fn_.buffers.find(buffer);
    if (found == fn_.buffers.end())
      continue; // out of scope here: nothing below can read it
    std::vector<llvm::Value *> pointers, values;
    std::vector<std::string> constraints;
    for (int64_t i = 0; i < buffer->size; ++i) {
      pointers.push_back(builder_.CreateConstInBoundsGEP1_64(f32, found->second, uint64_t(i)));
      values.push_back(builder_.CreateLoad(f32, pointers.back()));
      constraints.push_back("=f");
    }
    for (int64_t i = 0; i < buffer->size; ++i)
      constraints.push_back(std::to_string(i));
    std::vector<llvm::Type *> types(values.size(), f32);
    auto *fenceType = llvm::FunctionType::get(llvm::StructType::get(context_, types), types, false);
    llvm::CallInst *fence = builder_.CreateCall(
        fenceType,
        llvm::InlineAsm::get(fenceType, "", fmt::format("{}", fmt::join(constraints, ",")), true),
        values);
    for (size_t i = 0; i < pointers.size(); ++i)
      builder_.CreateStore(builder_.CreateExtractValue(fence, static_cast<unsigned>(i)),
                           pointers[i]);
  }
  return {};
}

} // namespace kiln::codegen::nvptx
