// The checked constructors' invariants: what every node of a kind holds however it was built
// (a builder, a pass's rebuild, the parser), so no later layer re-checks a node's own types.
// A violation is a compiler bug (KILN_CHECK); text that fails them is refused by the parser
// before it constructs anything. Context-dependent rules (scopes, where GPU statements may
// stand) are the verifier's.
#include "ir/kernel/KernelIR.h"
#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/Printer.h"
#include "ir/kernel/ScalarOps.h"
#include "ir/kernel/TensorMap.h"
#include "ir/kernel/WgmmaLayout.h"

#include "support/Error.h"

#include <fmt/format.h>

namespace kiln::kir::detail {

namespace {

bool isIntegerLike(const Type &t) { return isInteger(t.dtype) || t.dtype == DType::Bool; }

void checkPresent(const void *operand, std::string_view what) {
  KILN_CHECK(operand != nullptr, fmt::format("{}: null operand", what));
}

void checkSameType(const ExprPtr &a, const ExprPtr &b, std::string_view what) {
  checkPresent(a.get(), what);
  checkPresent(b.get(), what);
  KILN_CHECK(a->type() == b->type(), fmt::format("{}: operand types differ ({} vs {})", what,
                                                 typeName(a->type()), typeName(b->type())));
}

void checkIndex(const ExprPtr &index, std::string_view what) {
  checkPresent(index.get(), what);
  KILN_CHECK(index->type() == Type::index(),
             fmt::format("{}: index must be an i64 scalar, got {}", what, typeName(index->type())));
}

void checkPredicate(const ExprPtr &predicate, std::string_view what) {
  KILN_CHECK(!predicate || predicate->type().dtype == DType::Bool,
             fmt::format("{}: predicate must be bool", what));
}

void checkFragment(const Fragment &fragment, DType dtype, int64_t count, std::string_view what) {
  KILN_CHECK(fragment.buffer && fragment.buffer->scope == MemScope::Register,
             fmt::format("{} must be a register buffer", what));
  KILN_CHECK(fragment.buffer->dtype == dtype,
             fmt::format("{} {} is {}, not {}", what, fragment.buffer->name,
                         dtypeName(fragment.buffer->dtype), dtypeName(dtype)));
  KILN_CHECK(fragment.offset >= 0 && fragment.offset + count <= fragment.buffer->size,
             fmt::format("{} {}[{}, {}) is outside its {} elements", what, fragment.buffer->name,
                         fragment.offset, fragment.offset + count, fragment.buffer->size));
}

} // namespace

// ---- Expressions ------------------------------------------------------------------------------

void checkNode(const IntImm &node) {
  KILN_CHECK(isIntegerLike(node.type()), "int constant of a float type");
}

void checkNode(const FloatImm &node) {
  KILN_CHECK(isFloatingPoint(node.type().dtype), "float constant of a non-float type");
}

void checkNode(const VarRef &node) { checkPresent(node.var.get(), "variable reference"); }

void checkNode(const Unary &node) {
  checkPresent(node.operand.get(), "unary");
  KILN_CHECK(node.op != UnaryOp::Not || node.type().dtype == DType::Bool,
             "logical not of a non-bool");
}

void checkNode(const Binary &node) {
  checkSameType(node.lhs, node.rhs, "binary");
  Type operand = node.lhs->type();
  if (node.op == BinaryOp::And || node.op == BinaryOp::Or)
    KILN_CHECK(isIntegerLike(operand), "logical op on floats");
  Type expected = isComparison(node.op) ? Type{DType::Bool, operand.lanes} : operand;
  KILN_CHECK(node.type() == expected, fmt::format("binary of {} typed {}, expected {}",
                                                  typeName(operand), typeName(node.type()),
                                                  typeName(expected)));
}

void checkNode(const Select &node) {
  checkSameType(node.onTrue, node.onFalse, "select");
  checkPresent(node.cond.get(), "select");
  KILN_CHECK(node.cond->type().dtype == DType::Bool &&
                 (node.cond->type().lanes == 1 || node.cond->type().lanes == node.type().lanes),
             "select condition must be bool with 1 or matching lanes");
}

void checkNode(const Cast &node) {
  checkPresent(node.value.get(), "cast");
  KILN_CHECK(node.value->type().lanes == node.type().lanes, "cast changes the lane count");
}

void checkNode(const Load &node) {
  checkPresent(node.buffer.get(), "load");
  checkIndex(node.index, "load");
  checkPredicate(node.predicate, "load");
  KILN_CHECK(node.type().lanes >= 1, "load of no lanes");
}

void checkNode(const Call &node) {
  KILN_CHECK(node.args.size() == intrinsicArity(node.fn),
             fmt::format("{} takes {} arguments", intrinsicName(node.fn), intrinsicArity(node.fn)));
  for (const auto &arg : node.args)
    checkSameType(node.args[0], arg, "intrinsic call");
  KILN_CHECK(isFloatingPoint(node.args[0]->type().dtype) || node.fn == Intrinsic::Abs,
             fmt::format("{} of a non-float", intrinsicName(node.fn)));
  KILN_CHECK(node.type() == node.args[0]->type(), "a call has its arguments' type");
}

void checkNode(const Broadcast &node) {
  checkPresent(node.value.get(), "broadcast");
  KILN_CHECK(!node.value->type().isVector(), "broadcast of a vector");
}

void checkNode(const Shuffle &node) {
  checkPresent(node.value.get(), "shuffle");
  checkPresent(node.lane.get(), "shuffle");
  DType dtype = node.value->type().dtype;
  KILN_CHECK(!node.value->type().isVector() && (dtype == DType::F32 || dtype == DType::F64 ||
                                                dtype == DType::I32 || dtype == DType::I64),
             "shuffle of a value that is not an f32, f64, i32 or i64 scalar");
  KILN_CHECK(node.lane->type() == Type::scalar(DType::I32), "shuffle lane must be an i32 scalar");
}

// ---- Statements -------------------------------------------------------------------------------

void checkNode(const Block &) {}

void checkNode(const For &node) {
  checkPresent(node.var.get(), "for");
  KILN_CHECK(node.var->type == Type::index(), "loop variables are i64");
  checkIndex(node.begin, "loop begin");
  checkIndex(node.extent, "loop extent");
}

void checkNode(const Let &node) {
  checkPresent(node.var.get(), "let");
  checkPresent(node.value.get(), "let");
  KILN_CHECK(node.var->type == node.value->type(), "let value type differs from the variable's");
}

void checkNode(const If &node) {
  checkPresent(node.cond.get(), "if");
  KILN_CHECK(node.cond->type() == Type::boolean(), "if condition must be a bool scalar");
}

void checkNode(const Allocate &node) {
  checkPresent(node.buffer.get(), "alloc");
  KILN_CHECK(node.buffer->scope != MemScope::Global, "global buffers are kernel parameters");
}

void checkNode(const Store &node) {
  checkPresent(node.buffer.get(), "store");
  checkIndex(node.index, "store");
  checkPresent(node.value.get(), "store");
  KILN_CHECK(node.value->type().dtype == node.buffer->dtype,
             fmt::format("store of {} into {} buffer {}", dtypeName(node.value->type().dtype),
                         dtypeName(node.buffer->dtype), node.buffer->name));
  checkPredicate(node.predicate, "store");
}

void checkNode(const Evaluate &node) { checkPresent(node.value.get(), "eval"); }

void checkNode(const Barrier &) {}

void checkNode(const Atomic &node) {
  checkPresent(node.buffer.get(), "atomic");
  checkIndex(node.index, "atomic");
  checkPresent(node.value.get(), "atomic");
  KILN_CHECK(node.buffer->scope == MemScope::Global || node.buffer->scope == MemScope::Shared,
             "atomics update global or shared buffers");
  KILN_CHECK(node.value->type() == Type::scalar(node.buffer->dtype),
             fmt::format("atomic of {} into {} buffer {}", typeName(node.value->type()),
                         dtypeName(node.buffer->dtype), node.buffer->name));
  DType dtype = node.buffer->dtype;
  bool integer = dtype == DType::I32 || dtype == DType::I64;
  KILN_CHECK(integer || (node.op == AtomicOp::Add && (dtype == DType::F32 || dtype == DType::F64)),
             fmt::format("atomic {} is not defined on {}", atomicOpName(node.op), dtypeName(dtype)));
}

void checkNode(const Mma &node) {
  const MmaShapeInfo &info = mmaShapeInfo(node.mmaKind);
  checkFragment(node.d, DType::F32, info.cElements, "mma d");
  checkFragment(node.a, info.operandDtype, info.aElements, "mma a");
  checkFragment(node.b, info.operandDtype, info.bElements, "mma b");
  checkFragment(node.c, DType::F32, info.cElements, "mma c");
}

void checkNode(const LdMatrix &node) {
  KILN_CHECK(node.matrices == 1 || node.matrices == 2 || node.matrices == 4,
             "ldmatrix loads 1, 2 or 4 matrices");
  checkPresent(node.source.get(), "ldmatrix");
  KILN_CHECK(node.source->scope == MemScope::Shared, "ldmatrix reads a shared buffer");
  int bytes = dtypeByteSize(node.source->dtype);
  KILN_CHECK(bytes == 2 || (bytes == 1 && !node.transpose),
             "ldmatrix reads 16-bit elements, or 8-bit ones without .trans");
  checkFragment(node.destination, node.source->dtype,
                ldMatrixElementsPerMatrix(bytes) * node.matrices, "ldmatrix destination");
  checkIndex(node.rowIndex, "ldmatrix row");
}

void checkNode(const AsyncCopy &node) {
  checkPresent(node.destination.get(), "async copy");
  checkPresent(node.source.get(), "async copy");
  KILN_CHECK(node.destination->scope == MemScope::Shared && node.source->scope == MemScope::Global,
             "an async copy goes from a global buffer to a shared one");
  KILN_CHECK(node.destination->dtype == node.source->dtype,
             fmt::format("async copy from {} {} into {} {}", dtypeName(node.source->dtype),
                         node.source->name, dtypeName(node.destination->dtype),
                         node.destination->name));
  int bytes = node.lanes * dtypeByteSize(node.source->dtype);
  KILN_CHECK(bytes == 4 || bytes == 8 || bytes == 16,
             fmt::format("an async copy moves 4, 8 or 16 bytes, not {}", bytes));
  checkIndex(node.destinationIndex, "async copy destination");
  checkIndex(node.sourceIndex, "async copy source");
  KILN_CHECK(!node.predicate || node.predicate->type() == Type::boolean(),
             "async copy predicate must be a bool scalar");
}

void checkNode(const AsyncCommit &) {}

void checkNode(const AsyncWait &node) {
  KILN_CHECK(node.pendingGroups >= 0 && node.pendingGroups <= 7,
             "async wait allows 0..7 pending groups");
}

void checkNode(const Wgmma &node) {
  std::optional<std::string> problem = wgmmaProblem(node);
  KILN_CHECK(!problem, problem.value_or(""));
}

void checkNode(const WgmmaSync &node) {
  KILN_CHECK(node.pendingGroups >= 0 && node.pendingGroups <= 7 &&
                 (node.op == WgmmaSyncOp::Wait || node.pendingGroups == 0),
             "a wgmma wait allows 0..7 pending groups; the other syncs take none");
}

void checkNode(const Mbarrier &node) {
  KILN_CHECK(node.barriers && node.barriers->scope == MemScope::Shared &&
                 node.barriers->dtype == DType::I64,
             "mbarriers live in a shared i64 buffer");
  checkIndex(node.index, "mbarrier");
  KILN_CHECK((node.op == MbarrierOp::Wait) == (node.parity != nullptr),
             "an mbarrier wait, and only a wait, names the parity it waits for");
  KILN_CHECK(!node.parity || node.parity->type() == Type::index(),
             "mbarrier: parity must be an i64 scalar");
  switch (node.op) {
  case MbarrierOp::Init:
    KILN_CHECK(node.count >= 1 && node.count < (int64_t{1} << 20),
               "an mbarrier expects 1 to 2^20-1 arrivals");
    break;
  case MbarrierOp::ArriveExpectTx:
    KILN_CHECK(node.count >= 0 && node.count < (int64_t{1} << 20),
               "an mbarrier expects 0 to 2^20-1 bytes");
    break;
  case MbarrierOp::Arrive:
  case MbarrierOp::Wait: KILN_CHECK(node.count == 0, "an mbarrier arrive or wait has no count");
  }
}

void checkNode(const TmaLoad &node) {
  std::optional<std::string> problem = tmaLoadProblem(node);
  KILN_CHECK(!problem, problem.value_or(""));
}

} // namespace kiln::kir::detail
