// Internal to codegen/llvm: the emitter that turns kernel IR into LLVM IR for
// the host. Its members are split by concern over KernelToLlvm.cpp (functions,
// types, runtime declarations), KernelStmtToLlvm.cpp (statements and parallel
// outlining), KernelExprToLlvm.cpp (expressions) and KernelCastToLlvm.cpp (casts).
// The NVPTX emitter (NvptxEmitter.h) derives from it and overrides the virtual
// members where a GPU differs, so both backends share one expression semantics.
#pragma once

#include "codegen/Target.h"
#include "ir/kernel/KernelIR.h"
#include "ir/kernel/ScalarOps.h"
#include "support/Error.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln::codegen::host {

/// Emits kernels into one LLVM module; one emitter may emit several kernels.
class KernelEmitter {
public:
  KernelEmitter(llvm::Module &module, const CpuTarget &target);
  virtual ~KernelEmitter() = default;

  /// Defines `void @<kernel.name>(ptr %args)` and the internal functions its
  /// parallel loops are outlined into.
  virtual Expected<void> emitKernel(const kir::Kernel &kernel);

protected:
  /// For a derived backend: no CPU target (the host-only members that read it,
  /// function attributes and vectorize widths, must not be reached), and the
  /// backend's name for error messages.
  KernelEmitter(llvm::Module &module, std::string backendName, bool nativeHalf);

  /// What belongs to the LLVM function being emitted (the kernel, or the
  /// outlined body of a parallel loop).
  struct FunctionState {
    llvm::Function *function = nullptr;
    llvm::BasicBlock *entry = nullptr; ///< allocas and heap scratch, ahead of all loops
    std::unordered_map<const kir::Var *, llvm::Value *> vars;
    std::unordered_map<const kir::Buffer *, llvm::Value *> buffers;
    std::vector<llvm::Value *> heapScratch; ///< freed before the function returns
    bool inParallelBody = false;
  };

  // ---- KernelToLlvm.cpp: functions, types, declarations, errors
  Error error(ErrorCode code, const std::string &message) const;
  std::unexpected<Error> fail(ErrorCode code, const std::string &message) const {
    return std::unexpected(error(code, message));
  }
  llvm::Type *registerType(kir::Type type);
  llvm::Type *registerType(DType dtype) { return registerType(kir::Type::scalar(dtype)); }
  llvm::Type *memoryType(DType dtype);
  /// Starts `function`: an entry block for allocas, then a block for code.
  void beginFunction(llvm::Function *function);
  /// Frees heap scratch and returns from the current function.
  void finishFunction();
  void setFunctionAttributes(llvm::Function &function);
  /// An external C function, declared once per module with the given return
  /// and parameter types; small integers are zero-extended (C ABI).
  llvm::Function *declareRuntimeFunction(const std::string &name, llvm::Type *result,
                                         std::vector<llvm::Type *> params, bool pure);
  /// Allocates `bytes` for a Local/Register buffer in the entry block: on the
  /// stack when small, else on the heap (freed at function exit).
  llvm::Value *allocateScratch(const kir::Buffer &buffer);

  // ---- KernelStmtToLlvm.cpp
  Expected<void> emitStmt(const kir::Stmt &stmt);
  virtual Expected<void> emitFor(const kir::For &loop);
  /// A plain counted loop binding loop.var to [begin, end); `loopProperties`
  /// (may be empty) become the back edge's llvm.loop metadata.
  Expected<void> emitCountedLoop(const kir::For &loop, llvm::Value *begin, llvm::Value *end,
                                 std::vector<llvm::Metadata *> loopProperties);
  Expected<void> emitParallelFor(const kir::For &loop);
  /// Emits `body` with `key` bound to `value` in `map` (a loop variable, a let, an
  /// allocation), then restores the binding it shadowed.
  template <typename Key>
  Expected<void> emitScoped(std::unordered_map<const Key *, llvm::Value *> &map, const Key *key,
                            llvm::Value *value, const kir::Stmt &body) {
    auto [it, inserted] = map.try_emplace(key, value);
    llvm::Value *shadowed = inserted ? nullptr : std::exchange(it->second, value);
    Expected<void> emitted = emitStmt(body);
    if (shadowed)
      map[key] = shadowed; // `it` may not survive the body's insertions
    else
      map.erase(key);
    return emitted;
  }
  Expected<void> emitLet(const kir::Let &let);
  Expected<void> emitIf(const kir::If &branch);
  virtual Expected<void> emitAllocate(const kir::Allocate &allocate);
  /// GPU statements and expressions: the host has none (these fail).
  virtual Expected<void> emitBarrier(const kir::Barrier &barrier);
  virtual Expected<void> emitAtomic(const kir::Atomic &atomic);
  virtual Expected<llvm::Value *> emitShuffle(const kir::Shuffle &shuffle);
  /// The target instructions (tensor cores, asynchronous copies): GPU only (the host fails).
  virtual Expected<void> emitTargetInstr(const kir::TargetInstr &instr);
  /// The alignment of a `lanes`-element access to `buffer`.
  virtual llvm::Align accessAlignment(const kir::Buffer &buffer, int lanes);
  Expected<void> emitStore(const kir::Store &store);
  std::vector<llvm::Metadata *> vectorizeProperties(const kir::For &loop);
  /// Puts a memory access in the access group of every vectorized loop around it.
  void markParallelAccess(llvm::Instruction *access);

  // ---- KernelExprToLlvm.cpp
  Expected<llvm::Value *> emitExpr(const kir::Expr &expr);
  Expected<llvm::Value *> emitConstant(const kir::Expr &expr);
  Expected<llvm::Value *> emitUnary(const kir::Unary &unary);
  Expected<llvm::Value *> emitBinary(const kir::Binary &binary);
  Expected<llvm::Value *> emitFloatBinary(kir::BinaryOp op, llvm::Value *a, llvm::Value *b);
  Expected<llvm::Value *> emitIntegerBinary(kir::BinaryOp op, const kir::Binary &binary,
                                            llvm::Value *a, llvm::Value *b);
  Expected<llvm::Value *> emitLoad(const kir::Load &load);
  Expected<llvm::Value *> emitCall(const kir::Call &call);
  /// The math function `fn` on already emitted, type-checked arguments.
  virtual Expected<llvm::Value *> emitMath(kir::Intrinsic fn, kir::Type type,
                                           std::vector<llvm::Value *> args);
  /// The address of element `index` of `buffer` in the current function.
  Expected<llvm::Value *> elementPointer(const kir::Buffer &buffer, const kir::Expr &index);
  /// The lane mask for a predicated vector access: the predicate, splat when scalar.
  Expected<llvm::Value *> laneMask(const kir::Expr &predicate, int lanes);
  /// Register value <-> memory representation (bool is i1 in registers, i8 in memory).
  llvm::Value *toMemory(llvm::Value *value, kir::Type type);
  llvm::Value *fromMemory(llvm::Value *value, kir::Type type);
  /// Calls a scalar function on each lane of `value` (or once, for a scalar).
  llvm::Value *callPerLane(llvm::Function *function, llvm::Value *value, int lanes);

  // ---- KernelCastToLlvm.cpp
  Expected<llvm::Value *> emitCast(llvm::Value *value, kir::Type from, kir::Type to);
  /// Widens a narrow float (f16, bf16, f8) held as its bits to f32: exact.
  virtual llvm::Value *decodeNarrowFloat(llvm::Value *bits, DType dtype, int lanes);
  /// Rounds an f32 or f64 value to a narrow float's bits, once, to nearest even.
  virtual llvm::Value *encodeNarrowFloat(llvm::Value *value, DType from, DType to, int lanes);

  llvm::Module &module_;
  llvm::LLVMContext &context_;
  llvm::IRBuilder<> builder_;
  /// The access groups of the vectorized loops being emitted, outermost first: a
  /// vectorized loop's iterations are independent (docs/kernel-ir.md), which its
  /// llvm.loop.parallel_accesses tells the loop vectorizer, so gathers and
  /// data-dependent reads need no run-time overlap checks it cannot build.
  std::vector<llvm::MDNode *> accessGroups_;
  const CpuTarget *target_; ///< nullptr in a derived GPU emitter
  std::string backendName_;
  bool nativeHalf_;
  const kir::Kernel *kernel_ = nullptr;
  FunctionState fn_;
  int outlinedBodies_ = 0;
};

} // namespace kiln::codegen::host
