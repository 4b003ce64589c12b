// Shared plumbing of the op functions: graph lookup and node creation.
#include "frontend/OpBuilder.h"

namespace kiln::detail {

Graph *graphOf(const std::vector<Tensor> &operands) {
  for (const Tensor &operand : operands)
    if (!operand.empty())
      return operand.graph();
  return nullptr;
}

Tensor buildOp(ir::OpKind kind, const std::vector<Tensor> &operands, ir::AttrMap attrs,
               const std::source_location &loc) {
  Graph *graph = graphOf(operands);
  if (!graph)
    return Tensor();
  return graph->apply(kind, operands, std::move(attrs), loc);
}

Tensor failOn(const Tensor &like, ErrorCode code, std::string message,
              const std::source_location &loc) {
  if (!like.ok())
    return like;
  return like.graph()->fail(Error(code, std::move(message)), loc);
}

} // namespace kiln::detail
