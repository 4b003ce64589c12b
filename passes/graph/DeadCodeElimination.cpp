// "dce": erases nodes whose results are never used and are not graph outputs.
//
// Why: every other rewrite (simplify, fold, cse, decompose) replaces uses and
// leaves the old producers behind; this pass is the one place that deletes
// them, so the others stay small. Inputs and parameters are the model's
// interface (bound by name at run time), so they are kept even when unused.
#include "passes/graph/GraphPasses.h"

#include <ranges>

namespace kiln::passes {

namespace {

class DeadCodeElimination final : public Pass {
public:
  std::string_view name() const override { return "dce"; }
  std::string_view description() const override {
    return "erases nodes whose results are unused and are not outputs";
  }

  Expected<bool> run(ir::Graph &graph) override {
    // Users come after their operands in topological order, so walking it
    // backwards erases a whole dead chain in one sweep.
    bool changed = false;
    std::vector<ir::Node *> order = graph.topologicalOrder();
    for (ir::Node *node : std::views::reverse(order)) {
      if (node->result()->hasUses() || graph.isOutput(node->result()))
        continue;
      graph.eraseNode(node);
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createDeadCodeEliminationPass() {
  return std::make_unique<DeadCodeElimination>();
}

} // namespace kiln::passes
