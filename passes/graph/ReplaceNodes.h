// The sweep most graph passes make: each node, in topological order, that a rule rewrites is
// replaced by the rule's value.
#pragma once

#include "ir/graph/Graph.h"

#include <fmt/format.h>

#include <functional>
#include <string_view>

namespace kiln::passes {

/// The value that replaces `node`'s result, or nullptr to keep the node.
using NodeRewrite = std::function<Expected<ir::Value *>(ir::Node &node)>;

/// One sweep over `graph` in topological order: a node that `rewrite` gives a value for has its
/// uses moved to that value (which must have the node's type; `pass` names the pass in the
/// check) and is erased. Only the visited node is erased, so the rest of the order stays valid,
/// and its users see the replacement when their turn comes. Returns whether any node changed.
inline Expected<bool> replaceNodes(ir::Graph &graph, std::string_view pass,
                                   const NodeRewrite &rewrite) {
  bool changed = false;
  for (ir::Node *node : graph.topologicalOrder()) {
    KILN_TRY(ir::Value * replacement, rewrite(*node));
    if (!replacement)
      continue;
    KILN_CHECK(replacement->type() == node->type(),
               fmt::format("{} replaced {} ({}) with a value of type {}", pass, node->name(),
                           node->type().str(), replacement->type().str()));
    graph.replaceAllUsesWith(node->result(), replacement);
    graph.eraseNode(node);
    changed = true;
  }
  return changed;
}

} // namespace kiln::passes
