// Constructors for kernel IR that check operand types (a mismatch is a
// compiler bug) and fold the trivial integer cases (x + 0, x * 1, 2 * 3), so
// lowered index math stays readable before any pass runs.
#pragma once

#include "ir/kernel/KernelIR.h"

#include <string>
#include <vector>

namespace kiln::kir {

// ---- Constants and variables
ExprPtr index(int64_t value); ///< an i64 constant
ExprPtr intImm(int64_t value, Type type);
ExprPtr floatImm(double value, Type type);
ExprPtr boolImm(bool value);
/// A constant of `type` (float or integer or bool) holding `value`.
ExprPtr constant(double value, Type type);
VarPtr makeVar(std::string name, Type type = Type::index());
ExprPtr ref(const VarPtr &var);
BufferPtr makeBuffer(std::string name, DType dtype, int64_t size, MemScope scope = MemScope::Global);

/// The integer value of `e` when it is an IntImm, else nullopt.
std::optional<int64_t> constIntValue(const ExprPtr &e);

// ---- Arithmetic (operands of one type; comparisons yield bool of the same lanes)
ExprPtr add(ExprPtr a, ExprPtr b);
ExprPtr sub(ExprPtr a, ExprPtr b);
ExprPtr mul(ExprPtr a, ExprPtr b);
ExprPtr div(ExprPtr a, ExprPtr b);
ExprPtr mod(ExprPtr a, ExprPtr b);
ExprPtr min(ExprPtr a, ExprPtr b);
ExprPtr max(ExprPtr a, ExprPtr b);
ExprPtr binary(BinaryOp op, ExprPtr a, ExprPtr b);
ExprPtr eq(ExprPtr a, ExprPtr b);
ExprPtr ne(ExprPtr a, ExprPtr b);
ExprPtr lt(ExprPtr a, ExprPtr b);
ExprPtr le(ExprPtr a, ExprPtr b);
ExprPtr gt(ExprPtr a, ExprPtr b);
ExprPtr ge(ExprPtr a, ExprPtr b);
ExprPtr logicalAnd(ExprPtr a, ExprPtr b);
ExprPtr logicalOr(ExprPtr a, ExprPtr b);
ExprPtr neg(ExprPtr a);
ExprPtr logicalNot(ExprPtr a);
ExprPtr select(ExprPtr cond, ExprPtr onTrue, ExprPtr onFalse);
/// A Cast, or `value` itself when it already has `type`.
ExprPtr cast(ExprPtr value, Type type);
ExprPtr call(Intrinsic fn, std::vector<ExprPtr> args);
ExprPtr broadcast(ExprPtr value, int lanes);
ExprPtr load(BufferPtr buffer, ExprPtr index, int lanes = 1, ExprPtr predicate = nullptr);
/// A warp shuffle of an f32/f64/i32/i64 scalar; `lane` is an i32 scalar.
ExprPtr shuffle(ShuffleMode mode, ExprPtr value, ExprPtr lane);

// ---- Statements
/// A Block of the non-null statements, nested Blocks flattened; a single
/// statement is returned as itself.
StmtPtr seq(std::vector<StmtPtr> stmts);
StmtPtr forLoop(VarPtr var, ExprPtr begin, ExprPtr extent, ForKind kind, StmtPtr body);
/// for var in [0, extent)
StmtPtr forRange(VarPtr var, int64_t extent, ForKind kind, StmtPtr body);
StmtPtr let(VarPtr var, ExprPtr value, StmtPtr body);
StmtPtr ifThen(ExprPtr cond, StmtPtr thenBody, StmtPtr elseBody = nullptr);
StmtPtr allocate(BufferPtr buffer, StmtPtr body);
StmtPtr store(BufferPtr buffer, ExprPtr index, ExprPtr value, ExprPtr predicate = nullptr);
/// A block-wide barrier (GPU kernels).
StmtPtr barrier();
/// buffer[index] = op(buffer[index], value) atomically (GPU kernels; a global or shared buffer).
StmtPtr atomic(AtomicOp op, BufferPtr buffer, ExprPtr index, ExprPtr value);
/// A warp's matrix product d = a x b + c (GPU kernels; register fragments of
/// the sizes mmaShapeInfo(kind) gives, d and c f32).
StmtPtr mma(MmaKind kind, Fragment d, Fragment a, Fragment b, Fragment c);
/// A warp's ldmatrix of `matrices` 8 x 8 16-bit matrices from a shared buffer (of 16-bit
/// elements, or of bytes read as pairs without transpose).
StmtPtr ldMatrix(Fragment destination, int matrices, bool transpose, BufferPtr source,
                 ExprPtr rowIndex);
/// An asynchronous global -> shared copy of `lanes` elements (4, 8 or 16 bytes).
StmtPtr asyncCopy(BufferPtr destination, ExprPtr destinationIndex, BufferPtr source,
                  ExprPtr sourceIndex, int lanes, ExprPtr predicate = nullptr);
/// A warpgroup product (checked with wgmmaProblem) and its ordering statements.
StmtPtr wgmma(WgmmaKind kind, int n, Fragment d, SharedMatrix a, SharedMatrix b, bool accumulate);
StmtPtr wgmmaSync(WgmmaSyncOp op, int pendingGroups = 0);
StmtPtr asyncCommit();
StmtPtr asyncWait(int pendingGroups);
/// mbarrier operations on barriers[index] (a shared i64 buffer): init with `count` arrivals per
/// phase, arrive, arrive expecting `bytes` more bytes, wait for the phase of `parity`.
StmtPtr mbarrierInit(BufferPtr barriers, ExprPtr index, int64_t count);
StmtPtr mbarrierArrive(BufferPtr barriers, ExprPtr index);
StmtPtr mbarrierArriveExpectTx(BufferPtr barriers, ExprPtr index, int64_t bytes);
StmtPtr mbarrierWait(BufferPtr barriers, ExprPtr index, ExprPtr parity);
/// A bulk tensor copy of the box of `map` at `coords` (checked with tmaLoadProblem).
StmtPtr tmaLoad(BufferPtr destination, ExprPtr destinationIndex, TensorMapPtr map,
                std::vector<ExprPtr> coords, BufferPtr barriers, ExprPtr barrierIndex);

} // namespace kiln::kir
