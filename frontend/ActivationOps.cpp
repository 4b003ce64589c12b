// The DSL's activations that are composite elementwise ops of the op table
// (Ops.def; their decompositions are in ir/graph/ElementwiseDecompositions.cpp):
// each function adds one node, and the compiler decomposes it before fusion.
#include "frontend/OpBuilder.h"
#include "frontend/Ops.h"

namespace kiln {

using detail::buildOp;
using ir::OpKind;

Tensor relu6(Tensor x, std::source_location loc) { return buildOp(OpKind::Relu6, {x}, {}, loc); }

Tensor hardSigmoid(Tensor x, double alpha, double beta, std::source_location loc) {
  return buildOp(OpKind::HardSigmoid, {x}, {{"alpha", alpha}, {"beta", beta}}, loc);
}

Tensor hardSwish(Tensor x, std::source_location loc) {
  return buildOp(OpKind::HardSwish, {x}, {}, loc);
}

Tensor softplus(Tensor x, double beta, double threshold, std::source_location loc) {
  return buildOp(OpKind::Softplus, {x}, {{"beta", beta}, {"threshold", threshold}}, loc);
}

Tensor mish(Tensor x, std::source_location loc) { return buildOp(OpKind::Mish, {x}, {}, loc); }

Tensor leakyRelu(Tensor x, double slope, std::source_location loc) {
  return buildOp(OpKind::LeakyRelu, {x}, {{"alpha", slope}}, loc);
}

Tensor elu(Tensor x, double alpha, std::source_location loc) {
  return buildOp(OpKind::Elu, {x}, {{"alpha", alpha}}, loc);
}

} // namespace kiln
