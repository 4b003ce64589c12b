// Which group inputs a GPU kernel may read with vector loads: those whose
// every read is at the (broadcast) index of the value the kernel walks, so a
// vector of consecutive elements maps onto a vector of the input.
#include "passes/lower/gpu/GpuKinds.h"

#include "ir/kernel/Builder.h"

#include <algorithm>

namespace kiln::lower {

using namespace kiln::kir;

namespace {

/// Whether `shape` broadcasts to `targetShape` (NumPy rules) without
/// broadcasting its innermost axis.
bool rowBroadcastable(const ir::Shape &shape, const ir::Shape &targetShape) {
  if (shape.empty() || shape.size() > targetShape.size() || shape.back() != targetShape.back())
    return false;
  size_t offset = targetShape.size() - shape.size();
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] != targetShape[k + offset] && shape[k] != 1)
      return false;
  return true;
}

} // namespace

std::set<const ir::Value *> vectorReadInputs(const passes::FusionGroup &group,
                                             const ir::Value *target) {
  const ir::Shape &shape = target->type().shape;
  std::set<const ir::Value *> contiguous{target};
  auto qualifies = [&](const ir::Value *value) {
    if (!rowBroadcastable(value->type().shape, shape))
      return false;
    bool read = false;
    for (const ir::Node *node : group.nodes) {
      if (std::find(node->operands().begin(), node->operands().end(), value) == node->operands().end())
        continue;
      read = true;
      if (node->info().category != ir::OpCategory::Elementwise || node->kind() == ir::OpKind::BatchNorm ||
          !contiguous.contains(node->result()))
        return false;
    }
    return read;
  };
  // Readers come after what they read, so walking backwards settles readers first.
  for (size_t i = group.nodes.size(); i-- > 0;)
    if (group.nodes[i]->result() != target && qualifies(group.nodes[i]->result()))
      contiguous.insert(group.nodes[i]->result());
  std::set<const ir::Value *> inputs;
  for (const ir::Value *input : group.inputs)
    if (input == target || qualifies(input))
      inputs.insert(input);
  return inputs;
}

std::vector<ExprPtr> broadcastIndex(std::span<const ExprPtr> index, const ir::Shape &shape) {
  size_t offset = index.size() - shape.size();
  std::vector<ExprPtr> out;
  for (size_t k = 0; k < shape.size(); ++k)
    out.push_back(shape[k] == 1 ? kir::index(0) : index[k + offset]);
  return out;
}

} // namespace kiln::lower
