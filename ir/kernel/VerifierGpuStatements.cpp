// The verifier's rules for the fields of the GPU statements (see VerifierGpuStatements.h).
#include "ir/kernel/VerifierGpuStatements.h"

#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/Printer.h"
#include "ir/kernel/TargetInstr.h"
#include "ir/kernel/TensorMap.h"
#include "ir/kernel/WgmmaLayout.h"

#include <fmt/format.h>

namespace kiln::kir {

namespace {

/// PTX's wait_group takes an immediate 0..7.
constexpr int kMaxPendingGroups = 7;
/// PTX's mbarrier counts (arrivals, transaction bytes) are below 2^20.
constexpr int64_t kMbarrierCountLimit = int64_t{1} << 20;

/// `count` elements of a register buffer of `dtype` from the fragment's offset on.
std::optional<std::string> fragmentProblem(const Fragment &f, DType dtype, int64_t count,
                                           std::string_view what) {
  if (!f.buffer || f.buffer->scope != MemScope::Register)
    return fmt::format("{} must be a register buffer", what);
  if (f.buffer->dtype != dtype)
    return fmt::format("{} {} is {}, not {}", what, f.buffer->name, dtypeName(f.buffer->dtype),
                       dtypeName(dtype));
  if (f.offset < 0 || f.offset > f.buffer->size - count)
    return fmt::format("{} {}[{}, {}) is outside its {} elements", what, f.buffer->name, f.offset,
                       f.offset + count, f.buffer->size);
  return std::nullopt;
}

std::optional<std::string> mmaProblem(const Mma &mma) {
  const MmaShapeInfo &info = mmaShapeInfo(mma.mmaKind);
  for (const auto &[fragment, dtype, count, what] :
       {std::tuple{&mma.d, DType::F32, info.cElements, "mma d"},
        std::tuple{&mma.a, info.operandDtype, info.aElements, "mma a"},
        std::tuple{&mma.b, info.operandDtype, info.bElements, "mma b"},
        std::tuple{&mma.c, DType::F32, info.cElements, "mma c"}})
    if (auto problem = fragmentProblem(*fragment, dtype, count, what))
      return problem;
  return std::nullopt;
}

std::optional<std::string> ldMatrixProblem(const LdMatrix &ld) {
  const Buffer &source = *ld.source;
  if (ld.matrices != 1 && ld.matrices != 2 && ld.matrices != 4)
    return fmt::format("ldmatrix of {} matrices (1, 2 or 4)", ld.matrices);
  if (source.scope != MemScope::Shared)
    return fmt::format("ldmatrix reads {} buffer {}, not a shared one", memScopeName(source.scope),
                       source.name);
  int bytes = dtypeByteSize(source.dtype);
  if (bytes != 2 && bytes != 1)
    return fmt::format("ldmatrix reads 16-bit elements, or 8-bit ones as pairs, not {} ({})",
                       dtypeName(source.dtype), source.name);
  if (bytes == 1 && ld.transpose)
    return std::string("ldmatrix .trans of 8-bit elements would split their pairs");
  return fragmentProblem(ld.destination, source.dtype,
                         ldMatrixElementsPerMatrix(bytes) * ld.matrices, "ldmatrix destination");
}

std::optional<std::string> asyncCopyProblem(const AsyncCopy &copy) {
  const Buffer &destination = *copy.destination, &source = *copy.source;
  if (destination.scope != MemScope::Shared || source.scope != MemScope::Global)
    return fmt::format("an async copy goes from a global buffer to a shared one, not from {} {} "
                       "to {} {}",
                       memScopeName(source.scope), source.name, memScopeName(destination.scope),
                       destination.name);
  if (destination.dtype != source.dtype)
    return fmt::format("async copy from {} {} into {} {}", dtypeName(source.dtype), source.name,
                       dtypeName(destination.dtype), destination.name);
  int64_t bytes = int64_t{copy.lanes} * dtypeByteSize(source.dtype);
  if (copy.lanes < 1 || (bytes != 4 && bytes != 8 && bytes != 16))
    return fmt::format("an async copy moves 4, 8 or 16 bytes, not {} ({} lanes of {})", bytes,
                       copy.lanes, dtypeName(source.dtype));
  return std::nullopt;
}

/// An async or wgmma wait (`what`) for `pending` groups.
std::optional<std::string> pendingProblem(int64_t pending, std::string_view what) {
  if (pending < 0 || pending > kMaxPendingGroups)
    return fmt::format("{} for {} pending groups (0 .. {})", what, pending, kMaxPendingGroups);
  return std::nullopt;
}

std::optional<std::string> mbarrierProblem(const Mbarrier &barrier) {
  const Buffer &barriers = *barrier.barriers;
  MbarrierOp op = barrier.op;
  int64_t count = barrier.count;
  if (barriers.scope != MemScope::Shared || barriers.dtype != DType::I64)
    return fmt::format("mbarrier {} is not a shared i64 buffer ({} {})", barriers.name,
                       memScopeName(barriers.scope), dtypeName(barriers.dtype));
  if ((op == MbarrierOp::Wait) != (barrier.parity != nullptr))
    return fmt::format("mbarrier_{} {} a parity (only a wait has one)", mbarrierOpName(op),
                       barrier.parity ? "has" : "lacks");
  switch (op) {
  case MbarrierOp::Init:
    if (count < 1 || count >= kMbarrierCountLimit)
      return fmt::format("mbarrier_init with {} arrivals (1 .. 2^20 - 1)", count);
    break;
  case MbarrierOp::ArriveExpectTx:
    if (count < 0 || count >= kMbarrierCountLimit)
      return fmt::format("mbarrier_arrive_expect_tx of {} bytes (0 .. 2^20 - 1)", count);
    break;
  case MbarrierOp::Arrive:
  case MbarrierOp::Wait:
    if (count != 0)
      return fmt::format("mbarrier_{} with a count of {} (it has none)", mbarrierOpName(op),
                         count);
    break;
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string> atomicProblem(AtomicOp op, const Buffer &buffer, Type value) {
  if (buffer.scope != MemScope::Global && buffer.scope != MemScope::Shared)
    return fmt::format("atomic {} on {} buffer {} (only global and shared memory)",
                       atomicOpName(op), memScopeName(buffer.scope), buffer.name);
  bool isAdd = op == AtomicOp::Add;
  bool typeOk = buffer.dtype == DType::I32 || buffer.dtype == DType::I64 ||
                (isAdd && (buffer.dtype == DType::F32 || buffer.dtype == DType::F64));
  if (!typeOk)
    return fmt::format("atomic {} is not defined on {} (buffer {}; add takes f32, f64, i32, i64, "
                       "max and min i32, i64)",
                       atomicOpName(op), dtypeName(buffer.dtype), buffer.name);
  if (value != Type::scalar(buffer.dtype))
    return fmt::format("atomic {} of {} into {} buffer {} (the value is a scalar of the "
                       "buffer's dtype)",
                       atomicOpName(op), typeName(value), dtypeName(buffer.dtype), buffer.name);
  return std::nullopt;
}

std::optional<std::string> shuffleProblem(const Shuffle &shuffle) {
  const Type value = shuffle.value->type();
  if (value.isVector() || (value.dtype != DType::F32 && value.dtype != DType::F64 &&
                           value.dtype != DType::I32 && value.dtype != DType::I64))
    return fmt::format("a shuffle moves an f32, f64, i32 or i64 scalar, not {}", typeName(value));
  if (shuffle.lane->type() != Type::scalar(DType::I32))
    return fmt::format("a shuffle's lane must be an i32 scalar, got {}",
                       typeName(shuffle.lane->type()));
  return std::nullopt;
}

std::optional<std::string> targetInstrProblem(TargetOp op,
                                              const std::vector<TargetOperand> &operands) {
  switch (op) {
  case TargetOp::Mma: return mmaProblem(viewOf<Mma>(op, operands));
  case TargetOp::LdMatrix: return ldMatrixProblem(viewOf<LdMatrix>(op, operands));
  case TargetOp::AsyncCopy: return asyncCopyProblem(viewOf<AsyncCopy>(op, operands));
  case TargetOp::AsyncCommit: return std::nullopt;
  case TargetOp::AsyncWait:
    return pendingProblem(viewOf<AsyncWait>(op, operands).pendingGroups, "async wait");
  case TargetOp::Wgmma: return wgmmaProblem(viewOf<Wgmma>(op, operands));
  case TargetOp::WgmmaSync: {
    auto sync = viewOf<WgmmaSync>(op, operands);
    if (sync.op != WgmmaSyncOp::Wait && sync.pendingGroups != 0)
      return fmt::format("wgmma_{} with {} pending groups (only a wait has them)",
                         wgmmaSyncOpName(sync.op), sync.pendingGroups);
    return pendingProblem(sync.pendingGroups, "wgmma wait");
  }
  case TargetOp::Mbarrier: return mbarrierProblem(viewOf<Mbarrier>(op, operands));
  case TargetOp::TmaLoad: return tmaLoadProblem(viewOf<TmaLoad>(op, operands));
  }
  return std::nullopt;
}

std::optional<std::string> gpuStatementProblem(const Stmt &stmt) {
  if (auto *atomic = as<Atomic>(stmt))
    return atomicProblem(atomic->op, *atomic->buffer, atomic->value->type());
  if (auto *instr = as<TargetInstr>(stmt))
    return targetInstrProblem(instr->op, instr->operands);
  return std::nullopt;
}

std::string_view gpuStatementName(const Stmt &stmt) {
  switch (stmt.kind()) {
  case StmtKind::Barrier: return "a barrier";
  case StmtKind::Atomic: return "an atomic";
  case StmtKind::TargetInstr: return targetInstrInfo(static_cast<const TargetInstr &>(stmt).op).what;
  default: return "a statement";
  }
}

} // namespace kiln::kir
