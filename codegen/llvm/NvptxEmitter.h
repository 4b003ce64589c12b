// Internal to codegen/llvm: the emitter that turns GPU kernels into LLVM IR for
// the NVPTX backend. It shares expression, cast and statement emission with
// the host emitter and overrides what a GPU does differently: the kernel frame
// and launch loops (NvptxEmitter.cpp), barriers, atomics and warp shuffles
// (NvptxEmitter.cpp), math through libdevice and narrow-float casts in
// registers (NvptxMathAndCasts.cpp).
#pragma once

#include "codegen/PtxInstructions.h"
#include "codegen/llvm/KernelEmitter.h"
#include "ir/kernel/GpuLaunch.h"

#include <functional>
#include <unordered_map>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::codegen::nvptx {

/// Address spaces of the NVPTX target (PTX state spaces).
inline constexpr unsigned kGlobalAddressSpace = 1;
inline constexpr unsigned kSharedAddressSpace = 3;

/// The oldest PTX ISA version (major * 10 + minor) that has every
/// instruction `kernel` needs beyond the target's default: mma on e4m3
/// operands needs 8.4. 0 when the target's default serves.
int requiredPtxVersion(const kir::Kernel &kernel);

/// Emits GPU kernels into one module with the nvptx64 triple and data layout.
class NvptxEmitter final : public host::KernelEmitter {
public:
  NvptxEmitter(llvm::Module &module, const GpuTarget &target);

  /// Defines `void @<kernel.name>(ptr addrspace(1) noalias ...)`, one parameter
  /// per buffer, annotated as a kernel with the block shape as maxntid.
  Expected<void> emitKernel(const kir::Kernel &kernel) override;

private:
  Expected<void> emitFor(const kir::For &loop) override;
  Expected<void> emitAllocate(const kir::Allocate &allocate) override;
  Expected<void> emitBarrier(const kir::Barrier &barrier) override;
  Expected<void> emitAtomic(const kir::Atomic &atomic) override;
  /// Each op to its emitter below, which reads its typed view.
  Expected<void> emitTargetInstr(const kir::TargetInstr &instr) override;
  Expected<llvm::Value *> emitShuffle(const kir::Shuffle &shuffle) override;
  llvm::Align accessAlignment(const kir::Buffer &buffer, int lanes) override;

  // ---- NvptxTensorCore.cpp: mma, ldmatrix and cp.async
  Expected<void> emitMma(const kir::Mma &mma);
  Expected<void> emitLdMatrix(const kir::LdMatrix &ldMatrix);
  Expected<void> emitAsyncCopy(const kir::AsyncCopy &copy);
  Expected<void> emitAsyncCommit(const kir::AsyncCommit &commit);
  Expected<void> emitAsyncWait(const kir::AsyncWait &wait);
  /// Calls `instruction` as convergent inline asm on `operands`, one per constraint (an
  /// output's is nullptr, a read-write operand's its current value); returns the outputs.
  std::vector<llvm::Value *> emitAsm(const InlinePtx &instruction,
                                     const std::vector<llvm::Value *> &operands);
  /// Unsupported, naming the kernel, `what` and the instruction, where the target lacks it.
  Expected<void> require(const InlinePtx &instruction, std::string_view what) const;

  // ---- NvptxWgmma.cpp: warpgroup products on sm_90a
  Expected<void> emitWgmma(const kir::Wgmma &product);
  Expected<void> emitWgmmaSync(const kir::WgmmaSync &sync);
  Expected<void> emitMbarrier(const kir::Mbarrier &barrier);
  Expected<void> emitTmaLoad(const kir::TmaLoad &copy);
  /// The 32-bit shared address of buffer[index].
  Expected<llvm::Value *> sharedAddress(const kir::Buffer &buffer, const kir::Expr &index);
  /// `matrix`'s 64-bit descriptor, from the shared address of its first element.
  Expected<llvm::Value *> wgmmaDescriptor(const kir::SharedMatrix &matrix);
  /// The address of `fragment`'s element `element`, after checking that the
  /// fragment is an allocated register buffer of `dtype` holding `count` elements.
  Expected<llvm::Value *> fragmentElement(const kir::Fragment &fragment, DType dtype,
                                          int64_t count, int64_t element, std::string_view what);
  /// `count` elements of a register fragment as 32-bit operand words: f32 as
  /// is (rounded to tf32 bits with `toTf32`), 16- and 8-bit values packed two
  /// or four to a word, element 2i (4i) in the low bits.
  Expected<std::vector<llvm::Value *>> fragmentWords(const kir::Fragment &fragment, DType dtype,
                                                     int64_t count, bool toTf32,
                                                     std::string_view what);

  // ---- NvptxMathAndCasts.cpp
  Expected<llvm::Value *> emitMath(kir::Intrinsic fn, kir::Type type,
                                   std::vector<llvm::Value *> args) override;
  llvm::Value *decodeNarrowFloat(llvm::Value *bits, DType dtype, int lanes) override;
  llvm::Value *encodeNarrowFloat(llvm::Value *value, DType from, DType to, int lanes) override;
  /// Applies `scalar` to each lane of equally shaped vectors (or once, to scalars).
  llvm::Value *perLane(std::vector<llvm::Value *> args, int lanes,
                       const std::function<llvm::Value *(std::vector<llvm::Value *>)> &scalar);
  /// An f64 rounded to f32 toward zero with the inexact flag folded into the
  /// last bit (round to odd), so one more rounding to a narrower format is
  /// exactly the single rounding of the f64 value.
  llvm::Value *roundToOddF32(llvm::Value *f64);
  llvm::Value *f32ToF8(llvm::Value *f32, DType to);
  llvm::Value *f8E4M3ToF32(llvm::Value *bits);

  /// The lanes of the current thread's warp that exist (all 32 unless the
  /// block's thread count is not a multiple of 32).
  llvm::Value *activeLaneMask();
  /// The module's extern dynamic shared array (created on first use).
  llvm::GlobalVariable *dynamicShared();
  /// The base of this kernel's shared layout in the dynamic array, rounded up to the layout's
  /// alignment (GpuLaunch::sharedAlignment) where that passes 16 bytes.
  llvm::Value *sharedBase();

  const GpuTarget &gpu_;
  kir::GpuLaunch launch_;
  int sharedBuffers_ = 0;
  /// Every Wgmma accumulator buffer emitted so far, in order (the waits fence them).
  std::vector<const kir::Buffer *> wgmmaAccumulators_;
  /// The by-value tensor map parameters (grid constants) of the kernel being emitted.
  std::unordered_map<const kir::TensorMap *, llvm::Argument *> tensorMaps_;
};

} // namespace kiln::codegen::nvptx
