// One expression of a kernel flattened into a table (children, variables and buffers as
// indices), and the one translation of an Expr into it: the reference evaluator and the SIMT
// simulator both run kernels from such tables.
#pragma once

#include "ir/kernel/KernelIR.h"
#include "ir/kernel/ScalarOps.h"
#include "support/Error.h"

namespace kiln::kir {

inline constexpr int kNoFlatNode = -1;

struct FlatExpr {
  ExprKind kind = ExprKind::IntImm;
  Type type;
  DType operandDtype = DType::F32; ///< Unary, Binary, Cast, Call: the operands' dtype
  int op = 0;                      ///< BinaryOp, UnaryOp, Intrinsic or ShuffleMode
  int slot = 0;                    ///< where the runner keeps its value
  int args[3] = {kNoFlatNode, kNoFlatNode, kNoFlatNode}; ///< Select: cond, onTrue, onFalse;
                                                         ///< Load: index, predicate;
                                                         ///< Shuffle: value, lane
  int argCount = 0;
  int var = kNoFlatNode;    ///< VarRef
  int buffer = kNoFlatNode; ///< Load
  bool constant = false;
  Scalar constantValue; ///< IntImm, FloatImm
};

/// `e` as a FlatExpr (its slot left to the caller): `child(expr)` flattens each operand, in
/// operand order, to its index or an error; `varIndex(var)` and `bufferIndex(buffer)` give
/// the table indices of what it names.
template <typename Child, typename VarIndex, typename BufferIndex>
Expected<FlatExpr> flattenExpr(const Expr &e, Child &&child, VarIndex &&varIndex,
                               BufferIndex &&bufferIndex) {
  FlatExpr node{e.kind(), e.type()};
  switch (e.kind()) {
  case ExprKind::IntImm:
    node.constant = true;
    node.constantValue =
        Scalar::ofInt(wrapInteger(static_cast<const IntImm &>(e).value, node.type.dtype));
    break;
  case ExprKind::FloatImm:
    node.constant = true;
    node.constantValue = Scalar::ofFloat(static_cast<const FloatImm &>(e).value);
    break;
  case ExprKind::VarRef: node.var = varIndex(*static_cast<const VarRef &>(e).var); break;
  case ExprKind::Unary: {
    auto &unary = static_cast<const Unary &>(e);
    KILN_TRY(node.args[0], child(unary.operand));
    node.op = static_cast<int>(unary.op);
    node.operandDtype = node.type.dtype;
    break;
  }
  case ExprKind::Binary: {
    auto &binary = static_cast<const Binary &>(e);
    KILN_TRY(node.args[0], child(binary.lhs));
    KILN_TRY(node.args[1], child(binary.rhs));
    node.op = static_cast<int>(binary.op);
    node.operandDtype = binary.lhs->type().dtype;
    break;
  }
  case ExprKind::Select: {
    auto &select = static_cast<const Select &>(e);
    KILN_TRY(node.args[0], child(select.cond));
    KILN_TRY(node.args[1], child(select.onTrue));
    KILN_TRY(node.args[2], child(select.onFalse));
    break;
  }
  case ExprKind::Cast: {
    auto &cast = static_cast<const Cast &>(e);
    KILN_TRY(node.args[0], child(cast.value));
    node.operandDtype = cast.value->type().dtype;
    break;
  }
  case ExprKind::Load: {
    auto &load = static_cast<const Load &>(e);
    node.buffer = bufferIndex(*load.buffer);
    KILN_TRY(node.args[0], child(load.index));
    if (load.predicate) {
      KILN_TRY(node.args[1], child(load.predicate));
    }
    break;
  }
  case ExprKind::Call: {
    auto &call = static_cast<const Call &>(e);
    KILN_CHECK(call.args.size() <= 3, "the verifier admits intrinsics of at most 3 arguments");
    for (size_t i = 0; i < call.args.size(); ++i) {
      KILN_TRY(node.args[i], child(call.args[i]));
    }
    node.argCount = static_cast<int>(call.args.size());
    node.op = static_cast<int>(call.fn);
    node.operandDtype = node.type.dtype;
    break;
  }
  case ExprKind::Broadcast: {
    KILN_TRY(node.args[0], child(static_cast<const Broadcast &>(e).value));
    break;
  }
  case ExprKind::Shuffle: {
    auto &shuffle = static_cast<const Shuffle &>(e);
    KILN_TRY(node.args[0], child(shuffle.value));
    KILN_TRY(node.args[1], child(shuffle.lane));
    node.op = static_cast<int>(shuffle.mode);
    break;
  }
  }
  return node;
}

} // namespace kiln::kir
