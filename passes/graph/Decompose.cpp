// "decompose": replaces composite ops (softmax, log_softmax, layer_norm,
// batch_norm, global_avg_pool, scaled_dot_product_attention, and the
// composite elementwise ops relu6, hard_swish, ...) by the primitive ops their
// op-table decomposition builds (ir/graph/Decompositions.cpp,
// ir/graph/ElementwiseDecompositions.cpp).
//
// Why: a backend then only needs kernels for primitives, and fusion sees the
// reductions and elementwise steps inside a composite, so it can group them
// with their neighbours. The compile pipeline limits it to the ops fusion has
// no kernel for (opsWithoutKernels()), keeping the composites that have one.
#include "passes/graph/GraphPasses.h"

#include "ir/graph/Graph.h"
#include "passes/graph/ReplaceNodes.h"

#include <algorithm>
#include <fmt/format.h>

namespace kiln::passes {

namespace {

class Decompose final : public Pass {
public:
  explicit Decompose(std::vector<ir::OpKind> onlyOps) : onlyOps_(std::move(onlyOps)) {}

  std::string_view name() const override { return "decompose"; }
  std::string_view description() const override {
    return "rewrites composite ops into primitive ops";
  }

  Expected<bool> run(ir::Graph &graph) override {
    return replaceNodes(graph, name(), [&](ir::Node &node) -> Expected<ir::Value *> {
      ir::DecomposeFn decompose = node.info().decompose;
      if (!decompose || !selected(node.kind()))
        return nullptr;
      return decompose(graph, node);
    });
  }

private:
  bool selected(ir::OpKind kind) const {
    return onlyOps_.empty() || std::find(onlyOps_.begin(), onlyOps_.end(), kind) != onlyOps_.end();
  }

  std::vector<ir::OpKind> onlyOps_;
};

} // namespace

std::unique_ptr<Pass> createDecomposePass(std::vector<ir::OpKind> onlyOps) {
  return std::make_unique<Decompose>(std::move(onlyOps));
}

Expected<std::unique_ptr<Pass>> createDecomposePass(std::span<const std::string_view> opNames) {
  std::vector<ir::OpKind> kinds;
  std::string composites;
  for (const ir::OpInfo &info : ir::allOps())
    if (info.decompose)
      composites += (composites.empty() ? "" : ", ") + std::string(info.name);
  for (std::string_view name : opNames) {
    std::optional<ir::OpKind> kind = ir::opKindFromName(name);
    if (!kind || !ir::opInfo(*kind).decompose)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("decompose: '{}' is not {}; ops with a decomposition: {}", name,
                                   kind ? "a composite op" : "an op", composites));
    kinds.push_back(*kind);
  }
  if (kinds.empty())
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("decompose: no ops listed; ops with a decomposition: {}",
                                 composites));
  return createDecomposePass(std::move(kinds));
}

} // namespace kiln::passes
