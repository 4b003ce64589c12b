// Tensor-core statements and asynchronous copies for NVPTX: Mma through the
// llvm.nvvm.mma intrinsics (the inline PTX of codegen/PtxInstructions.h for e4m3, which LLVM 19
// lacks), LdMatrix through llvm.nvvm.ldmatrix, and cp.async through llvm.nvvm.cp.async.*; and
// the inline asm call every other GPU instruction is emitted as. Register fragments are allocas: their elements are
// loaded and stored around each call, and SROA keeps them in registers.
#include "codegen/llvm/NvptxEmitter.h"

#include "ir/kernel/Builder.h"
#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/Visitor.h"

#include <fmt/format.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace kiln::codegen::nvptx {
namespace {

/// PTX ISA 8.4 introduced mma on f8 (e4m3, e5m2) operands.
constexpr int kPtxForF8Mma = 84;

/// Marks a call convergent: every lane of the warp must execute it together,
/// so no pass may sink it into a branch or duplicate it across one. LLVM 19
/// does not mark the mma and ldmatrix intrinsics so.
llvm::CallInst *convergent(llvm::CallInst *call) {
  call->addFnAttr(llvm::Attribute::Convergent);
  return call;
}

/// The elements of an intrinsic's or asm's result: a struct's fields, or the value.
std::vector<llvm::Value *> resultWords(llvm::IRBuilder<> &builder, llvm::Value *result) {
  auto *structType = llvm::dyn_cast<llvm::StructType>(result->getType());
  if (!structType)
    return {result};
  std::vector<llvm::Value *> words;
  for (unsigned i = 0; i < structType->getNumElements(); ++i)
    words.push_back(builder.CreateExtractValue(result, i));
  return words;
}

llvm::Intrinsic::ID ldMatrixIntrinsic(int matrices, bool transpose) {
  switch (matrices) {
  case 1:
    return transpose ? llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x1_trans_b16
                     : llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x1_b16;
  case 2:
    return transpose ? llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16
                     : llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16;
  default:
    return transpose ? llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16
                     : llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16;
  }
}

/// cp.async.ca for 4 and 8 bytes (cached in L1); cp.async.cg, which bypasses
/// L1, exists only for 16. The `.s` forms take the source size (0 zero-fills).
llvm::Intrinsic::ID asyncCopyIntrinsic(int bytes, bool withSourceSize) {
  switch (bytes) {
  case 4:
    return withSourceSize ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4_s
                          : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4;
  case 8:
    return withSourceSize ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8_s
                          : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8;
  default:
    return withSourceSize ? llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s
                          : llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16;
  }
}

} // namespace

int requiredPtxVersion(const kir::Kernel &kernel) {
  struct Finder : kir::StmtVisitor {
    int version = 0;
    void visitTargetInstr(const kir::TargetInstr &instr) override {
      if (instr.op == kir::TargetOp::Mma &&
          instr.view<kir::Mma>().mmaKind == kir::MmaKind::E4M3_M16N8K32)
        version = std::max(version, kPtxForF8Mma);
    }
  } finder;
  finder.visit(kernel.body);
  return finder.version;
}

std::vector<llvm::Value *> NvptxEmitter::emitAsm(const InlinePtx &instruction,
                                                const std::vector<llvm::Value *> &operands) {
  KILN_CHECK(operands.size() == instruction.constraints.size(),
             fmt::format("{}: an operand per constraint", instruction.mnemonic));
  // LLVM names operand i $i, and writes a read-write operand as an output and an input tied
  // to it, after the other inputs.
  std::string text;
  for (char c : instruction.text)
    text += c == '%' ? '$' : c;
  std::vector<std::string> outputs, inputs, tied;
  std::vector<llvm::Type *> outputTypes;
  std::vector<llvm::Value *> values, tiedValues;
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string &constraint = instruction.constraints[i];
    if (constraint[0] != '=' && constraint[0] != '+') {
      inputs.push_back(constraint);
      values.push_back(operands[i]);
      continue;
    }
    if (constraint[0] == '+') {
      tied.push_back(std::to_string(outputs.size()));
      tiedValues.push_back(operands[i]);
    }
    outputs.push_back("=" + constraint.substr(1));
    // The constraint letter says the register: f32, 64-bit or 32-bit.
    outputTypes.push_back(constraint[1] == 'f'   ? builder_.getFloatTy()
                          : constraint[1] == 'l' ? builder_.getInt64Ty()
                                                 : builder_.getInt32Ty());
  }
  values.insert(values.end(), tiedValues.begin(), tiedValues.end());
  std::vector<std::string> constraints = outputs;
  constraints.insert(constraints.end(), inputs.begin(), inputs.end());
  constraints.insert(constraints.end(), tied.begin(), tied.end());
  if (instruction.clobbersMemory)
    constraints.push_back("~{memory}");
  llvm::Type *resultType = outputTypes.empty()       ? builder_.getVoidTy()
                           : outputTypes.size() == 1 ? outputTypes[0]
                                                     : llvm::StructType::get(context_, outputTypes);
  std::vector<llvm::Type *> operandTypes;
  for (llvm::Value *value : values)
    operandTypes.push_back(value->getType());
  auto *type = llvm::FunctionType::get(resultType, operandTypes, false);
  auto *code = llvm::InlineAsm::get(type, text, fmt::format("{}", fmt::join(constraints, ",")),
                                    /*hasSideEffects=*/instruction.clobbersMemory);
  llvm::CallInst *call = convergent(builder_.CreateCall(type, code, values));
  return outputTypes.empty() ? std::vector<llvm::Value *>{} : resultWords(builder_, call);
}

Expected<void> NvptxEmitter::require(const InlinePtx &instruction, std::string_view what) const {
  Expected<void> supported = requireInstruction(gpu_, instruction, what);
  return supported ? supported : fail(supported.error().code(), supported.error().message());
}

Expected<llvm::Value *> NvptxEmitter::fragmentElement(const kir::Fragment &fragment, DType dtype,
                                                     int64_t count, int64_t element,
                                                     std::string_view what) {
  const kir::Buffer *buffer = fragment.buffer.get();
  auto it = fn_.buffers.find(buffer);
  KILN_CHECK(it != fn_.buffers.end() && buffer->dtype == dtype &&
                 fragment.offset + count <= buffer->size,
             fmt::format("{}: the verifier admits only fragments inside an allocated register "
                         "buffer of {}",
                         what, dtypeName(dtype)));
  return builder_.CreateConstInBoundsGEP1_64(memoryType(dtype), it->second,
                                             static_cast<uint64_t>(fragment.offset + element));
}

Expected<std::vector<llvm::Value *>>
NvptxEmitter::fragmentWords(const kir::Fragment &fragment, DType dtype, int64_t count, bool toTf32,
                            std::string_view what) {
  llvm::Type *element = memoryType(dtype);
  std::vector<llvm::Value *> values;
  for (int64_t i = 0; i < count; ++i) {
    KILN_TRY(llvm::Value * pointer, fragmentElement(fragment, dtype, count, i, what));
    values.push_back(builder_.CreateLoad(element, pointer));
  }
  int64_t perWord = 4 / dtypeByteSize(dtype);
  if (perWord == 1) {
    if (toTf32)
      for (llvm::Value *&value : values)
        value = builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_f2tf32_rna, {}, {value});
    return values;
  }
  std::vector<llvm::Value *> words;
  llvm::Type *i32 = builder_.getInt32Ty();
  int bits = 32 / static_cast<int>(perWord);
  for (int64_t w = 0; w < count / perWord; ++w) {
    llvm::Value *word = builder_.CreateZExt(values[w * perWord], i32);
    for (int64_t part = 1; part < perWord; ++part)
      word = builder_.CreateOr(
          word, builder_.CreateShl(builder_.CreateZExt(values[w * perWord + part], i32),
                                   static_cast<uint64_t>(bits * part)));
    words.push_back(word);
  }
  return words;
}

Expected<void> NvptxEmitter::emitMma(const kir::Mma &mma) {
  const kir::MmaShapeInfo &info = kir::mmaShapeInfo(mma.mmaKind);
  InlinePtx instruction = mmaSync(mma.mmaKind);
  std::string name = fmt::format("mma.{}", kir::mmaKindName(mma.mmaKind));
  KILN_TRY_VOID(require(instruction, name));
  bool tf32 = mma.mmaKind == kir::MmaKind::TF32_M16N8K8;
  KILN_TRY(std::vector<llvm::Value *> a,
           fragmentWords(mma.a, info.operandDtype, info.aElements, tf32, name + " a"));
  KILN_TRY(std::vector<llvm::Value *> b,
           fragmentWords(mma.b, info.operandDtype, info.bElements, tf32, name + " b"));
  KILN_TRY(std::vector<llvm::Value *> c,
           fragmentWords(mma.c, DType::F32, info.cElements, false, name + " c"));
  // Every destination address is checked before anything is emitted for the product.
  std::vector<llvm::Value *> dPointers;
  for (int i = 0; i < info.cElements; ++i) {
    KILN_TRY(llvm::Value * pointer, fragmentElement(mma.d, DType::F32, info.cElements, i,
                                                    name + " d"));
    dPointers.push_back(pointer);
  }

  std::vector<llvm::Value *> operands, d;
  llvm::Value *result = nullptr;
  switch (mma.mmaKind) {
  case kir::MmaKind::F16_M16N8K16: {
    // The f16 intrinsic takes <2 x half> pairs; the bits are the packed words.
    auto *pair = llvm::FixedVectorType::get(builder_.getHalfTy(), 2);
    for (llvm::Value *word : a)
      operands.push_back(builder_.CreateBitCast(word, pair));
    for (llvm::Value *word : b)
      operands.push_back(builder_.CreateBitCast(word, pair));
    operands.insert(operands.end(), c.begin(), c.end());
    result = convergent(builder_.CreateIntrinsic(
        llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32, {}, operands));
    break;
  }
  case kir::MmaKind::BF16_M16N8K16:
  case kir::MmaKind::TF32_M16N8K8: {
    for (auto *words : {&a, &b, &c})
      operands.insert(operands.end(), words->begin(), words->end());
    result = convergent(builder_.CreateIntrinsic(
        mma.mmaKind == kir::MmaKind::BF16_M16N8K16 ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16
                                                   : llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32,
        {}, operands));
    break;
  }
  case kir::MmaKind::E4M3_M16N8K32: {
    // LLVM 19 has no f8 mma intrinsic: the instruction as inline PTX, which
    // is why the module's PTX version is raised to 8.4 (requiredPtxVersion).
    std::vector<llvm::Value *> asmOperands(dPointers.size(), nullptr);
    for (auto *words : {&a, &b, &c})
      asmOperands.insert(asmOperands.end(), words->begin(), words->end());
    d = emitAsm(instruction, asmOperands);
    break;
  }
  }
  if (result)
    d = resultWords(builder_, result);
  KILN_CHECK(d.size() == dPointers.size(), "mma result count");
  for (size_t i = 0; i < d.size(); ++i)
    builder_.CreateStore(d[i], dPointers[i]);
  return {};
}

Expected<void> NvptxEmitter::emitLdMatrix(const kir::LdMatrix &load) {
  std::string name = fmt::format("ldmatrix.x{}{}", load.matrices, load.transpose ? ".trans" : "");
  KILN_TRY_VOID(require(ldMatrix(load.matrices, load.transpose), name));
  const kir::Buffer &source = *load.source;
  int elementBytes = static_cast<int>(dtypeByteSize(source.dtype));
  int perMatrix = kir::ldMatrixElementsPerMatrix(elementBytes);
  int64_t count = int64_t(perMatrix) * load.matrices;
  std::vector<llvm::Value *> destination;
  for (int64_t i = 0; i < count; ++i) {
    KILN_TRY(llvm::Value * pointer, fragmentElement(load.destination, source.dtype, count, i,
                                                    name + " destination"));
    destination.push_back(pointer);
  }
  // A pointer into the shared state space: the intrinsic is overloaded on it
  // and emits ldmatrix...shared.b16.
  KILN_TRY(llvm::Value * row, elementPointer(source, *load.rowIndex));
  llvm::Value *result = convergent(builder_.CreateIntrinsic(
      ldMatrixIntrinsic(load.matrices, load.transpose), {row->getType()}, {row}));
  std::vector<llvm::Value *> words = resultWords(builder_, result);
  KILN_CHECK(static_cast<int>(words.size()) == load.matrices, "ldmatrix result count");
  // Each word holds the lane's elements of one matrix, the first in the low bits.
  llvm::Type *part = builder_.getIntNTy(8 * static_cast<unsigned>(elementBytes));
  for (size_t j = 0; j < words.size(); ++j)
    for (int e = 0; e < perMatrix; ++e) {
      llvm::Value *shifted =
          e == 0 ? words[j] : builder_.CreateLShr(words[j], uint64_t(8 * elementBytes * e));
      builder_.CreateStore(builder_.CreateTrunc(shifted, part), destination[perMatrix * j + e]);
    }
  return {};
}

Expected<void> NvptxEmitter::emitAsyncCopy(const kir::AsyncCopy &copy) {
  const kir::Buffer &destination = *copy.destination, &source = *copy.source;
  int bytes = copy.lanes * static_cast<int>(dtypeByteSize(source.dtype));
  KILN_TRY_VOID(require(cpAsync(bytes, copy.predicate != nullptr),
                                   fmt::format("async copy of {} bytes into '{}'", bytes,
                                               destination.name)));
  KILN_TRY(llvm::Value * to, elementPointer(destination, *copy.destinationIndex));
  if (!copy.predicate) {
    KILN_TRY(llvm::Value * from, elementPointer(source, *copy.sourceIndex));
    builder_.CreateIntrinsic(asyncCopyIntrinsic(bytes, false), {}, {to, from});
    return {};
  }
  // A false predicate copies 0 source bytes, which zero-fills the
  // destination; the source address is then element 0, so it is in bounds
  // even where the index is not. The choice is between addresses, not indices, so
  // that the address of a gathered copy (an im2col row's base plus a tap's offset)
  // stays one add from values the loop computes once.
  KILN_TRY(llvm::Value * indexed, elementPointer(source, *copy.sourceIndex));
  KILN_TRY(llvm::Value * first, elementPointer(source, *kir::index(0)));
  KILN_TRY(llvm::Value * predicate, emitExpr(*copy.predicate));
  llvm::Value *from = builder_.CreateSelect(predicate, indexed, first);
  llvm::Value *sourceBytes =
      builder_.CreateSelect(predicate, builder_.getInt32(bytes), builder_.getInt32(0));
  builder_.CreateIntrinsic(asyncCopyIntrinsic(bytes, true), {}, {to, from, sourceBytes});
  return {};
}

Expected<void> NvptxEmitter::emitAsyncCommit(const kir::AsyncCommit &) {
  KILN_TRY_VOID(require(cpAsyncCommit(), "async commit"));
  builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
  return {};
}

Expected<void> NvptxEmitter::emitAsyncWait(const kir::AsyncWait &wait) {
  KILN_TRY_VOID(require(cpAsyncWait(wait.pendingGroups), "async wait"));
  builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {},
                           {builder_.getInt32(static_cast<uint32_t>(wait.pendingGroups))});
  return {};
}

} // namespace kiln::codegen::nvptx
