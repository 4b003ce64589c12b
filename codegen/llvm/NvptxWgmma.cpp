// Warpgroup products (wgmma.mma_async) and their ordering statements for NVPTX, as the inline
// PTX of codegen/PtxInstructions.h (LLVM 19 has no wgmma intrinsics), sm_90a only. Operands are matrix descriptors built from
// the shared address of each operand's first element; accumulators are tied asm operands, and
// every wait passes them through an empty asm so that no read moves above the wait.
#include "codegen/llvm/NvptxEmitter.h"

#include "ir/kernel/WgmmaLayout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <llvm/IR/InlineAsm.h>

#include <algorithm>

namespace kiln::codegen::nvptx {

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
  InlinePtx instruction = wgmmaMmaAsync(product.wgmmaKind, product.n, product.a.mnMajor,
                                        product.b.mnMajor, product.accumulate);
  std::string name = "wgmma." + kir::wgmmaPtxShape(product.wgmmaKind, product.n);
  KILN_TRY_VOID(require(instruction, name));
  int nd = product.n / 2;
  std::vector<llvm::Value *> dPointers, operands;
  for (int i = 0; i < nd; ++i) {
    KILN_TRY(llvm::Value * pointer, fragmentElement(product.d, DType::F32, nd, i, name + " d"));
    dPointers.push_back(pointer);
  }
  KILN_TRY(llvm::Value * aDescriptor, wgmmaDescriptor(product.a));
  KILN_TRY(llvm::Value * bDescriptor, wgmmaDescriptor(product.b));
  if (std::ranges::find(wgmmaAccumulators_, product.d.buffer.get()) == wgmmaAccumulators_.end())
    wgmmaAccumulators_.push_back(product.d.buffer.get());
  for (llvm::Value *pointer : dPointers)
    operands.push_back(product.accumulate ? builder_.CreateLoad(builder_.getFloatTy(), pointer)
                                          : nullptr);
  operands.insert(operands.end(),
                  {aDescriptor, bDescriptor, builder_.getInt32(product.accumulate ? 1 : 0)});
  std::vector<llvm::Value *> d = emitAsm(instruction, operands);
  for (int i = 0; i < nd; ++i)
    builder_.CreateStore(d[static_cast<size_t>(i)], dPointers[static_cast<size_t>(i)]);
  return {};
}

Expected<void> NvptxEmitter::emitWgmmaSync(const kir::WgmmaSync &sync) {
  InlinePtx instruction = wgmmaSync(sync.op, sync.pendingGroups);
  KILN_TRY_VOID(
      require(instruction, fmt::format("wgmma {}", kir::wgmmaSyncOpName(sync.op))));
  emitAsm(instruction, {});
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
