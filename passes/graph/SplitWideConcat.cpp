// "split-concat": a concat of more than kMaxKernelInputs operands becomes a
// tree of concats along the same axis, none wider than the bound.
//
// Why: a concat's kernel takes every operand as an argument. Fusion bounds the
// inputs of a kernel it grows, but cannot split one node, so a concat of
// 20,000 operands would be one kernel with 20,000 pointer arguments: past the
// GPU's kernel parameter space, and minutes in LLVM's vectorizer on the CPU.
#include "passes/graph/GraphPasses.h"

#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/graph/ReplaceNodes.h"

#include <algorithm>

namespace kiln::passes {

namespace {

class SplitWideConcat final : public Pass {
public:
  std::string_view name() const override { return "split-concat"; }
  std::string_view description() const override {
    return "splits concats wider than a kernel's input bound into a tree of concats";
  }

  Expected<bool> run(ir::Graph &graph) override {
    return replaceNodes(graph, name(), [&](ir::Node &node) -> Expected<ir::Value *> {
      if (node.kind() != ir::OpKind::Concat || node.numOperands() <= kMaxKernelInputs)
        return nullptr;
      return buildTree(graph, node);
    });
  }

private:
  /// Concats runs of kMaxKernelInputs neighbouring operands, level by level,
  /// until one level fits in a single concat: the operands keep their order.
  static Expected<ir::Value *> buildTree(ir::Graph &graph, const ir::Node &concat) {
    std::vector<ir::Value *> level(concat.operands().begin(), concat.operands().end());
    const size_t fanIn = kMaxKernelInputs;
    while (level.size() > fanIn) {
      std::vector<ir::Value *> next;
      for (size_t first = 0; first < level.size(); first += fanIn) {
        size_t last = std::min(level.size(), first + fanIn);
        if (last - first == 1) {
          next.push_back(level[first]);
          continue;
        }
        std::vector<ir::Value *> run(level.begin() + first, level.begin() + last);
        KILN_TRY(ir::Value * part, graph.addNode(ir::OpKind::Concat, std::move(run),
                                                 concat.attrs(), concat.location()));
        next.push_back(part);
      }
      level = std::move(next);
    }
    return graph.addNode(ir::OpKind::Concat, std::move(level), concat.attrs(), concat.location());
  }
};

} // namespace

std::unique_ptr<Pass> createSplitWideConcatPass() { return std::make_unique<SplitWideConcat>(); }

} // namespace kiln::passes
