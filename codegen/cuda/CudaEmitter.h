// Internal to codegen/cuda: the emitter that writes one GPU kernel as CUDA C.
// Split by concern over CudaEmitter.cpp (kernel, names, statements) and
// CudaExprEmitter.cpp (expressions, casts, memory access).
#pragma once

#include "codegen/PtxInstructions.h"
#include "codegen/Target.h"
#include "ir/kernel/Bounds.h"
#include "ir/kernel/GpuLaunch.h"
#include "ir/kernel/KernelIR.h"
#include "support/Error.h"

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln::codegen::cuda {

/// A piece of C expression text and how tightly it binds (C precedence
/// levels: 0 primary, 3 unary and casts, 5 * / %, 6 + -, 9 relational,
/// 10 equality, 11 &, 13 |, 14 &&, 15 ||, 16 ?:), so operands get
/// parentheses only where C needs them.
struct CCode {
  std::string text;
  int precedence = 0;
  /// An i64 value whose C type is int: its range, and every intermediate's,
  /// was proven to fit in 32 bits. 32-bit index math takes half the
  /// registers of 64-bit math (ptxas spills on the latter in tiled kernels);
  /// C's conversions widen it exactly wherever it meets a long long.
  bool isInt = false;
};

/// Whether `range` is known and lies within C's int.
bool fitsInInt(const std::optional<kir::Interval> &range);

/// The C type a kernel IR dtype has in registers (bool is bool) and in memory
/// (bool is one byte, narrow floats are their bits).
std::string registerCType(DType dtype);
std::string storageCType(DType dtype);

/// Writes kernels as CUDA C; one emitter per kernel.
class CudaEmitter {
public:
  CudaEmitter(const kir::Kernel &kernel, const GpuTarget &target);

  /// The kernel's __global__ function, or an error naming the kernel.
  Expected<std::string> emit();

private:
  const kir::Kernel &kernel_;
  const GpuTarget &target_;
  kir::GpuLaunch launch_;
  bool declaredDynamicShared_ = false; ///< the extern dynamic shared array is declared
  /// Every Wgmma accumulator buffer emitted so far, in order (the waits fence them).
  std::vector<const kir::Buffer *> wgmmaAccumulators_;
  std::string out_;
  int indent_ = 1;
  std::unordered_set<std::string> usedNames_;
  std::unordered_map<const kir::Var *, std::string> varNames_;
  std::unordered_map<const kir::Buffer *, std::string> bufferNames_;
  std::unordered_map<const kir::TensorMap *, std::string> tensorMapNames_; ///< by-value params
  kir::VarRanges ranges_;
  /// i64 variables declared as C int (their range fits).
  std::unordered_set<const kir::Var *> intVars_;
  /// Vector variables held as one CUDA vector value (float4...), lanes in its fields.
  std::unordered_set<const kir::Var *> vectorVars_;
  /// The value of every let variable emitted so far (what is known of its low bits).
  std::unordered_map<const kir::Var *, kir::ExprPtr> letValues_;

  // ---- CudaEmitter.cpp: kernel, names, statements
  std::unexpected<Error> fail(ErrorCode code, const std::string &message) const;
  /// A C identifier for an IR name: sanitized, not a keyword or builtin, unused so far.
  std::string freshName(std::string_view irName, std::string_view fallback);
  std::string bind(const kir::Var &var);
  void line(const std::string &text);
  Expected<void> declareSharedBuffers(const kir::StmtPtr &stmt);
  Expected<void> emitStmt(const kir::Stmt &stmt);
  Expected<void> emitFor(const kir::For &loop);
  Expected<void> emitLet(const kir::Let &let);
  /// A let's C declaration and the facts kept of its variable, without its body.
  Expected<void> bindLet(const kir::Let &let);
  Expected<void> emitIf(const kir::If &branch);
  Expected<void> emitAllocate(const kir::Allocate &allocate);
  Expected<void> emitStore(const kir::Store &store);
  Expected<void> emitAtomic(const kir::Atomic &atomic);

  // ---- CudaPairedStores.cpp: two adjacent scalar stores as one
  /// Where `first` and `second` (each a scalar store under its lets) write elements i and
  /// i + 1 of one buffer, i known even, emits both lets and one store of both values and
  /// returns true; otherwise emits nothing and returns false.
  Expected<bool> emitPairedStores(const kir::Stmt &first, const kir::Stmt &second);

  // ---- CudaTensorCore.cpp: mma, ldmatrix and cp.async as inline PTX
  /// Prints `instruction` as an asm statement on `operands`, C expressions in the order of its
  /// constraints (lvalues for outputs).
  void emitAsm(const InlinePtx &instruction, const std::vector<std::string> &operands);
  /// Unsupported, naming the kernel, `what` and the instruction, where the target lacks it.
  Expected<void> require(const InlinePtx &instruction, std::string_view what) const;
  Expected<void> emitMma(const kir::Mma &mma);
  Expected<void> emitLdMatrix(const kir::LdMatrix &load);
  Expected<void> emitAsyncCopy(const kir::AsyncCopy &copy);
  Expected<void> emitAsyncCommit(const kir::AsyncCommit &commit);
  Expected<void> emitAsyncWait(const kir::AsyncWait &wait);

  // ---- CudaWgmma.cpp: warpgroup products on sm_90a
  Expected<void> emitWgmma(const kir::Wgmma &product);
  Expected<void> emitWgmmaSync(const kir::WgmmaSync &sync);
  Expected<void> emitMbarrier(const kir::Mbarrier &barrier);
  Expected<void> emitTmaLoad(const kir::TmaLoad &copy);
  /// The 32-bit shared address of buffer[index] (a shared buffer in scope).
  Expected<std::string> sharedAddress(const kir::BufferPtr &buffer, const kir::ExprPtr &index,
                                      std::string_view what);
  /// The C expression of `matrix`'s 64-bit descriptor.
  Expected<std::string> wgmmaDescriptor(const kir::SharedMatrix &matrix, std::string_view what);
  /// C lvalues for elements [0, count) of a register fragment of `dtype`.
  Expected<std::vector<std::string>> fragmentElements(const kir::Fragment &fragment, DType dtype,
                                                      int64_t count, std::string_view what);
  /// The fragment's values as 32-bit asm operands: f32 as is (converted to
  /// tf32 bits with `toTf32`), 16- and 8-bit values packed two or four to a
  /// word, element 2i (4i) in the low bits.
  Expected<std::vector<std::string>> fragmentOperands(const kir::Fragment &fragment, DType dtype,
                                                      int64_t count, bool toTf32,
                                                      std::string_view what);

  // ---- CudaExprEmitter.cpp: expressions. Lines that must run before the
  // expression (vector loads into arrays, shuffles) are written out first.
  /// One C expression per lane.
  Expected<std::vector<CCode>> emitLanes(const kir::ExprPtr &expr);
  /// A scalar expression (a compiler bug for vectors).
  Expected<CCode> emitScalar(const kir::ExprPtr &expr);
  Expected<std::vector<CCode>> emitBinary(const kir::Binary &binary, const kir::ExprPtr &self);
  Expected<std::vector<CCode>> emitCall(const kir::Call &call);
  Expected<std::vector<CCode>> emitLoad(const kir::Load &load);
  Expected<CCode> emitShuffle(const kir::Shuffle &shuffle);
  Expected<CCode> emitCast(CCode value, DType from, DType to);
  /// `code` as a primary expression: itself if it is one, else a const
  /// temporary (an int for an i64 value computed in int).
  CCode materialize(CCode code, DType dtype, std::string_view nameHint);
  /// The bytes of `lanes` elements of `dtype` as one aligned CUDA vector type, if any.
  static std::optional<std::string> vectorCType(DType dtype, int lanes);
  /// Whether vectorCType(dtype, lanes) holds one element per field (float4,
  /// int2...) rather than elements packed into 32-bit words (uint2 of f16...).
  static bool hasLaneFields(DType dtype, int lanes);
  /// Lane k of a vector value `name` of vectorCType(dtype, lanes), as a storage value.
  static CCode vectorLane(const std::string &name, DType dtype, int lanes, int k);
  /// A vectorCType(dtype, lanes) value holding `values` (register values) as stored.
  static std::string vectorValue(const std::vector<CCode> &values, DType dtype);
  /// Register value of an element read from memory (bytes of a bool become bool).
  static CCode fromStorage(CCode element, DType dtype);
};

} // namespace kiln::codegen::cuda
