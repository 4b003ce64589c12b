// The verifier's rules for the fields of the GPU statements (see VerifierGpuStatements.h).
#include "ir/kernel/VerifierGpuStatements.h"

#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/Printer.h"
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

std::optional<std::string> atomicProblem(const Atomic &atomic) {
  const Buffer &buffer = *atomic.buffer;
  if (buffer.scope != MemScope::Global && buffer.scope != MemScope::Shared)
    return fmt::format("atomic {} on {} buffer {} (only global and shared memory)",
                       atomicOpName(atomic.op), memScopeName(buffer.scope), buffer.name);
  bool isAdd = atomic.op == AtomicOp::Add;
  bool typeOk = buffer.dtype == DType::I32 || buffer.dtype == DType::I64 ||
                (isAdd && (buffer.dtype == DType::F32 || buffer.dtype == DType::F64));
  if (!typeOk)
    return fmt::format("atomic {} is not defined on {} (buffer {}; add takes f32, f64, i32, i64, "
                       "max and min i32, i64)",
                       atomicOpName(atomic.op), dtypeName(buffer.dtype), buffer.name);
  if (atomic.value->type() != Type::scalar(buffer.dtype))
    return fmt::format("atomic {} of {} into {} buffer {} (the value is a scalar of the "
                       "buffer's dtype)",
                       atomicOpName(atomic.op), typeName(atomic.value->type()),
                       dtypeName(buffer.dtype), buffer.name);
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
  if (ld.matrices != 1 && ld.matrices != 2 && ld.matrices != 4)
    return fmt::format("ldmatrix of {} matrices (1, 2 or 4)", ld.matrices);
  if (ld.source->scope != MemScope::Shared)
    return fmt::format("ldmatrix reads {} buffer {}, not a shared one",
                       memScopeName(ld.source->scope), ld.source->name);
  int bytes = dtypeByteSize(ld.source->dtype);
  if (bytes != 2 && bytes != 1)
    return fmt::format("ldmatrix reads 16-bit elements, or 8-bit ones as pairs, not {} ({})",
                       dtypeName(ld.source->dtype), ld.source->name);
  if (bytes == 1 && ld.transpose)
    return std::string("ldmatrix .trans of 8-bit elements would split their pairs");
  return fragmentProblem(ld.destination, ld.source->dtype,
                         int64_t{ldMatrixElementsPerMatrix(bytes)} * ld.matrices,
                         "ldmatrix destination");
}

std::optional<std::string> asyncCopyProblem(const AsyncCopy &copy) {
  if (copy.destination->scope != MemScope::Shared || copy.source->scope != MemScope::Global)
    return fmt::format("an async copy goes from a global buffer to a shared one, not from {} {} "
                       "to {} {}",
                       memScopeName(copy.source->scope), copy.source->name,
                       memScopeName(copy.destination->scope), copy.destination->name);
  if (copy.destination->dtype != copy.source->dtype)
    return fmt::format("async copy from {} {} into {} {}", dtypeName(copy.source->dtype),
                       copy.source->name, dtypeName(copy.destination->dtype),
                       copy.destination->name);
  int64_t bytes = int64_t{copy.lanes} * dtypeByteSize(copy.source->dtype);
  if (copy.lanes < 1 || (bytes != 4 && bytes != 8 && bytes != 16))
    return fmt::format("an async copy moves 4, 8 or 16 bytes, not {} ({} lanes of {})", bytes,
                       copy.lanes, dtypeName(copy.source->dtype));
  return std::nullopt;
}

std::optional<std::string> pendingProblem(int pending, std::string_view what) {
  if (pending < 0 || pending > kMaxPendingGroups)
    return fmt::format("{} for {} pending groups (0 .. {})", what, pending, kMaxPendingGroups);
  return std::nullopt;
}

std::optional<std::string> mbarrierProblem(const Mbarrier &barrier) {
  if (barrier.barriers->scope != MemScope::Shared || barrier.barriers->dtype != DType::I64)
    return fmt::format("mbarrier {} is not a shared i64 buffer ({} {})", barrier.barriers->name,
                       memScopeName(barrier.barriers->scope), dtypeName(barrier.barriers->dtype));
  if ((barrier.op == MbarrierOp::Wait) != (barrier.parity != nullptr))
    return fmt::format("mbarrier_{} {} a parity (only a wait has one)",
                       mbarrierOpName(barrier.op), barrier.parity ? "has" : "lacks");
  switch (barrier.op) {
  case MbarrierOp::Init:
    if (barrier.count < 1 || barrier.count >= kMbarrierCountLimit)
      return fmt::format("mbarrier_init with {} arrivals (1 .. 2^20 - 1)", barrier.count);
    break;
  case MbarrierOp::ArriveExpectTx:
    if (barrier.count < 0 || barrier.count >= kMbarrierCountLimit)
      return fmt::format("mbarrier_arrive_expect_tx of {} bytes (0 .. 2^20 - 1)", barrier.count);
    break;
  case MbarrierOp::Arrive:
  case MbarrierOp::Wait:
    if (barrier.count != 0)
      return fmt::format("mbarrier_{} with a count of {} (it has none)", mbarrierOpName(barrier.op),
                         barrier.count);
    break;
  }
  return std::nullopt;
}

} // namespace

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

std::optional<std::string> gpuStatementProblem(const Stmt &stmt) {
  switch (stmt.kind()) {
  case StmtKind::Atomic: return atomicProblem(static_cast<const Atomic &>(stmt));
  case StmtKind::Mma: return mmaProblem(static_cast<const Mma &>(stmt));
  case StmtKind::LdMatrix: return ldMatrixProblem(static_cast<const LdMatrix &>(stmt));
  case StmtKind::AsyncCopy: return asyncCopyProblem(static_cast<const AsyncCopy &>(stmt));
  case StmtKind::AsyncWait:
    return pendingProblem(static_cast<const AsyncWait &>(stmt).pendingGroups, "async wait");
  case StmtKind::Wgmma: return wgmmaProblem(static_cast<const Wgmma &>(stmt));
  case StmtKind::WgmmaSync: {
    auto &sync = static_cast<const WgmmaSync &>(stmt);
    if (sync.op != WgmmaSyncOp::Wait && sync.pendingGroups != 0)
      return fmt::format("wgmma_{} with {} pending groups (only a wait has them)",
                         wgmmaSyncOpName(sync.op), sync.pendingGroups);
    return pendingProblem(sync.pendingGroups, "wgmma wait");
  }
  case StmtKind::Mbarrier: return mbarrierProblem(static_cast<const Mbarrier &>(stmt));
  case StmtKind::TmaLoad: return tmaLoadProblem(static_cast<const TmaLoad &>(stmt));
  default: return std::nullopt;
  }
}

std::string_view gpuStatementName(StmtKind kind) {
  switch (kind) {
  case StmtKind::Barrier: return "a barrier";
  case StmtKind::Atomic: return "an atomic";
  case StmtKind::Mma: return "an mma";
  case StmtKind::LdMatrix: return "an ldmatrix";
  case StmtKind::AsyncCopy: return "an async copy";
  case StmtKind::AsyncCommit: return "an async commit";
  case StmtKind::AsyncWait: return "an async wait";
  case StmtKind::Wgmma: return "a wgmma";
  case StmtKind::WgmmaSync: return "a wgmma sync";
  case StmtKind::Mbarrier: return "an mbarrier";
  case StmtKind::TmaLoad: return "a bulk tensor copy";
  default: return "a statement";
  }
}

} // namespace kiln::kir
