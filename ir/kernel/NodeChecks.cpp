// The checked constructors' invariants: what every node of a kind holds however it was built
// (a builder, a pass's rebuild, the parser), so no later layer re-checks a node's own types.
// A violation is a compiler bug (KILN_CHECK); text that fails them is refused by the parser
// before it constructs anything. Context-dependent rules (scopes, where GPU statements may
// stand) are the verifier's.
#include "ir/kernel/KernelIR.h"
#include "ir/kernel/Printer.h"
#include "ir/kernel/ScalarOps.h"
#include "ir/kernel/TargetInstr.h"
#include "ir/kernel/VerifierGpuStatements.h"

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

// The GPU statements: their operands present and of their signature's kinds, their indices
// i64 here; their own rules (scopes, dtypes, fragment sizes, counts) in gpuStatementProblem,
// which the parser and the verifier share.

namespace {

void checkGpuRules(const Stmt &node) {
  std::optional<std::string> problem = gpuStatementProblem(node);
  KILN_CHECK(!problem, problem.value_or(""));
}

} // namespace

void checkNode(const Atomic &node) {
  checkPresent(node.buffer.get(), "atomic");
  checkIndex(node.index, "atomic");
  checkPresent(node.value.get(), "atomic");
  checkGpuRules(node);
}

void checkNode(const TargetInstr &node) {
  const TargetInstrInfo &info = targetInstrInfo(node.op);
  KILN_CHECK(node.operands.size() == info.operands.size(),
             fmt::format("{} takes {} operands, not {}", info.name, info.operands.size(),
                         node.operands.size()));
  for (size_t i = 0; i < info.operands.size(); ++i) {
    const OperandSpec &spec = info.operands[i];
    const TargetOperand &operand = node.operands[i];
    std::string what = fmt::format("{} {}", info.name, spec.role);
    KILN_CHECK(holdsKind(operand, spec.kind), fmt::format("{}: wrong kind of operand", what));
    if (enumSize(spec.kind) > 0) {
      int64_t value = std::get<int64_t>(operand);
      KILN_CHECK(value >= 0 && value < enumSize(spec.kind), fmt::format("{}: no such value", what));
    }
    if (spec.kind == OperandKind::Predicate) {
      const ExprPtr &predicate = std::get<ExprPtr>(operand);
      KILN_CHECK(!predicate || predicate->type() == Type::boolean(),
                 fmt::format("{} must be a bool scalar", what));
    } else {
      forEachExpr(operand, [&](const ExprPtr &e) { checkIndex(e, what); });
    }
    if (spec.kind == OperandKind::Index)
      checkPresent(std::get<ExprPtr>(operand).get(), what);
    if (spec.kind >= OperandKind::Buffer && spec.kind <= OperandKind::TensorMap)
      checkPresent(operandBuffer(operand).get(), what);
  }
  checkGpuRules(node);
}

} // namespace kiln::kir::detail
