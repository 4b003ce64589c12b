// Internal to codegen/cuda: the emitter that writes one GPU kernel as CUDA C.
// Split by concern over CudaEmitter.cpp (kernel, names, statements) and
// CudaExprEmitter.cpp (expressions, casts, memory access).
#pragma once

#include "codegen/Target.h"
#include "ir/kernel/GpuLaunch.h"
#include "ir/kernel/KernelIR.h"
#include "passes/kernel/Bounds.h"
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
};

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
  std::string out_;
  int indent_ = 1;
  std::unordered_set<std::string> usedNames_;
  std::unordered_map<const kir::Var *, std::string> varNames_;
  std::unordered_map<const kir::Buffer *, std::string> bufferNames_;
  kir::VarRanges ranges_;

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
  Expected<void> emitIf(const kir::If &branch);
  Expected<void> emitAllocate(const kir::Allocate &allocate);
  Expected<void> emitStore(const kir::Store &store);
  Expected<void> emitAtomic(const kir::Atomic &atomic);

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
  /// `code` as a primary expression: itself if it is one, else a const temporary.
  CCode materialize(CCode code, DType dtype, std::string_view nameHint);
  /// The bytes of `lanes` elements of `dtype` as one aligned CUDA vector type, if any.
  static std::optional<std::string> vectorCType(DType dtype, int lanes);
  /// Register value of an element read from memory (bytes of a bool become bool).
  static CCode fromStorage(CCode element, DType dtype);
};

} // namespace kiln::codegen::cuda
