// The per-op rules of fusion: roles, anchor kinds, what may follow an anchor,
// and the printer's value names.
#include "passes/graph/FusionRules.h"

#include "passes/graph/GraphPasses.h"

#include <algorithm>

namespace kiln::passes {

namespace {

/// Fusion has no group for attention (it becomes matmuls and a softmax), and a
/// composite elementwise op has no element emission: its decomposition is
/// its only definition.
bool hasNoKernel(const ir::OpInfo &info) {
  return info.kind == ir::OpKind::ScaledDotProductAttention || ir::isCompositeElementwise(info);
}

} // namespace

std::vector<ir::OpKind> opsWithoutKernels() {
  std::vector<ir::OpKind> kinds;
  for (const ir::OpInfo &info : ir::allOps())
    if (hasNoKernel(info))
      kinds.push_back(info.kind);
  return kinds;
}

namespace fusion {

using ir::OpCategory;
using ir::OpKind;

FusionRole fusionRole(const ir::Node &node) {
  if (hasNoKernel(node.info()))
    return FusionRole::Decomposable;
  switch (node.kind()) {
  case OpKind::Iota: return FusionRole::Duplicated;
  case OpKind::SymbolSize: return FusionRole::Duplicated; // one load of the run's sizes
  case OpKind::Constant:
    // One element costs nothing to recompute; more would be a table to bake in.
    return node.type().numElements() == 1 ? FusionRole::Duplicated : FusionRole::Constant;
  default: break;
  }
  switch (node.info().category) {
  case OpCategory::DataMovement:
    // Re-indexing a constant or an iota (broadcasting an index table to the shape its
    // gather wants) reads it where it is: cheaper than writing the large result to memory
    // for the several kernels that share it. Only direct operands: no walk up a chain.
    if (node.numOperands() > 0 &&
        std::all_of(node.operands().begin(), node.operands().end(), [](const ir::Value *v) {
          const ir::Node *producer = v->definingNode();
          return producer != nullptr &&
                 (producer->kind() == OpKind::Constant || producer->kind() == OpKind::Iota);
        }))
      return FusionRole::Duplicated;
    return FusionRole::Free;
  case OpCategory::Elementwise: return FusionRole::Free;
  case OpCategory::Reduction:
  case OpCategory::Contraction:
  case OpCategory::Collective: return FusionRole::Anchor; // alone: anchorKind gives Opaque
  }
  KILN_UNREACHABLE("unknown op category");
}

GroupKind anchorKind(const ir::Node &anchor) {
  switch (anchor.kind()) {
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ReduceProd:
  case OpKind::ArgMax:
  case OpKind::ArgMin: return GroupKind::Reduction;
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
  case OpKind::LayerNorm: return GroupKind::RowNorm;
  case OpKind::MaxPool2D:
  case OpKind::AvgPool2D:
  case OpKind::GlobalAvgPool: return GroupKind::Pooling;
  case OpKind::Conv2D:
    return isDepthwiseConv2D(anchor) ? GroupKind::Pooling : GroupKind::Contraction;
  case OpKind::MatMul: return GroupKind::Contraction;
  default:
    // A reduction or contraction added to the op table without a kernel
    // template of its own: run it alone rather than fuse it wrongly.
    return GroupKind::Opaque;
  }
}

bool takesNoPrologue(const ir::Node &anchor) {
  GroupKind kind = anchorKind(anchor);
  return kind == GroupKind::Contraction || kind == GroupKind::Opaque || isDepthwiseConv2D(anchor);
}

bool isEpilogueOp(const ir::Node &node, const ir::Node &anchor) {
  return fusionRole(node) == FusionRole::Free && node.info().category == OpCategory::Elementwise &&
         node.type().shape == anchor.type().shape;
}

bool readsGathered(const ir::Node &user, const ir::Value *value) {
  return (user.kind() == OpKind::Gather || user.kind() == OpKind::TakeAlongAxis) &&
         user.operand(0) == value;
}

bool isAliasOp(const ir::Node &node) {
  return node.kind() == OpKind::Reshape || node.kind() == OpKind::Squeeze ||
         node.kind() == OpKind::Unsqueeze;
}

// Mirrors ValueNames in ir/graph/Printer.cpp: the listing must name values as
// the printed graph does.
ValueNames::ValueNames(const ir::Graph &graph) {
  for (const ir::Value *input : graph.inputs())
    names_[input] = "%" + input->name();
  for (const ir::Value *param : graph.params())
    names_[param] = "%" + param->name();
  std::vector<ir::Node *> order = graph.topologicalOrder();
  if (order.size() != graph.numNodes())
    for (ir::Node *node : graph.nodes())
      if (std::find(order.begin(), order.end(), node) == order.end())
        order.push_back(node);
  size_t next = 0;
  for (const ir::Node *node : order)
    names_[node->result()] = "%" + std::to_string(next++);
}

std::string ValueNames::operator()(const ir::Value *value) const {
  auto it = names_.find(value);
  return it == names_.end() ? std::string("%<unknown>") : it->second;
}

} // namespace fusion
} // namespace kiln::passes
