// The op table's C++ face: OpKind, OpCategory and OpInfo, all expanded from Ops.def.
#pragma once

#include "ir/graph/Attribute.h"
#include "ir/graph/TensorType.h"
#include "support/Error.h"

#include <span>
#include <string_view>
#include <vector>

namespace kiln::ir {

class Graph;
class Node;
class Value;

enum class OpKind : uint16_t {
#define KILN_OP(Enum, ...) Enum,
#include "ir/graph/Ops.def"
#undef KILN_OP
};

inline constexpr int kNumOps = 0
#define KILN_OP(Enum, ...) +1
#include "ir/graph/Ops.def"
#undef KILN_OP
    ;

/// How an op computes, which decides the fusion group it can join.
/// Collective: communication across the ranks of a data-parallel run; no
/// kernel, a plan step that calls the run's communicator (docs/distributed.md).
enum class OpCategory : uint8_t { Elementwise, Reduction, Contraction, DataMovement, Collective };

std::string_view opCategoryName(OpCategory category);

/// What shape inference sees: operand types and the node's attributes, already
/// checked against the op's schema (present, right kinds, defaults filled in).
struct InferContext {
  OpKind kind;
  std::span<const TensorType> operands;
  const AttrMap &attrs;
};

/// Shape and dtype inference; also the op's semantic verifier. Errors start
/// with the op's name and show the operand types.
using InferFn = Expected<TensorType> (*)(const InferContext &);

/// A tensor in the reference interpreter: values held in fp64, already rounded
/// to `type.dtype`. Row-major.
struct RefTensor {
  TensorType type;
  std::vector<double> data;
};

/// What a reference implementation sees.
struct ReferenceContext {
  OpKind kind;
  std::span<const RefTensor *const> operands;
  const AttrMap &attrs;
  const TensorType &resultType;
};

/// Computes an op's result in fp64. The interpreter rounds the result to the
/// result dtype afterwards, so implementations return exact fp64 values.
/// Fails only on data-dependent bad input (an index out of range).
using ReferenceFn = Expected<std::vector<double>> (*)(const ReferenceContext &);

/// Rewrites `node` into primitive ops in `graph` and returns the value that
/// replaces its result. The caller replaces uses and erases the node.
using DecomposeFn = Expected<Value *> (*)(Graph &graph, Node &node);

/// The vector-Jacobian product of one node: given the gradient of the loss
/// w.r.t. the node's result (same type as the result), returns one gradient
/// per operand, each of that operand's type; nullptr for an operand that takes
/// no gradient (integer/bool operands, indices, a where's condition). The rules
/// live in ir/graph/Gradients.h; autodiff (passes/graph/Autodiff.h) calls them.
using GradientFn = Expected<std::vector<Value *>> (*)(Graph &graph, const Node &node,
                                                      Value *resultGradient);

/// Everything the table knows about one op.
struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpCategory category;
  int minOperands;
  int maxOperands; ///< -1: variadic.
  std::vector<AttrSpec> attrs;
  InferFn infer;
  ReferenceFn reference; ///< nullptr only for a composite elementwise op.
  DecomposeFn decompose; ///< nullptr for primitive ops.
  GradientFn gradient;   ///< nullptr: not differentiable, or a composite elementwise op (Ops.def).
  std::string_view doc;
};

/// A composite elementwise op: an elementwise row defined only by its
/// decomposition, with no reference or gradient of its own. The interpreter
/// evaluates the decomposition, autodiff differentiates it and the compile
/// pipeline decomposes the op before fusion, so no backend ever sees it.
inline bool isCompositeElementwise(const OpInfo &info) {
  return info.category == OpCategory::Elementwise && info.decompose != nullptr &&
         info.reference == nullptr;
}

const OpInfo &opInfo(OpKind kind);
inline std::string_view opName(OpKind kind) { return opInfo(kind).name; }
std::optional<OpKind> opKindFromName(std::string_view name);
/// Every op, in table order.
std::span<const OpInfo> allOps();

/// Checks `attrs` against the op's schema: unknown names, missing required
/// attributes, wrong kinds. Fills in defaults for omitted optional attributes.
Expected<AttrMap> normalizeAttrs(OpKind kind, AttrMap attrs);

/// Whether the op's shape inference computes symbolic sizes; inferResultType
/// refuses a symbolic operand of any other op with an error naming it.
bool inferenceTakesSymbolicSizes(OpKind kind);

/// Checks the operand count, normalizes attributes and runs shape inference.
Expected<TensorType> inferResultType(OpKind kind, std::span<const TensorType> operands,
                                     AttrMap &attrs);

} // namespace kiln::ir
