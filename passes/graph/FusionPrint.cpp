// Printing a fusion plan: the one-line-per-group listing and the Graphviz picture.
#include "passes/graph/Fusion.h"

#include "passes/graph/FusionRules.h"

#include <fmt/format.h>

#include <unordered_map>

namespace kiln::passes {

using namespace fusion;

std::string_view groupKindName(GroupKind kind) {
  switch (kind) {
  case GroupKind::Pointwise: return "pointwise";
  case GroupKind::Reduction: return "reduction";
  case GroupKind::RowNorm: return "row_norm";
  case GroupKind::Pooling: return "pooling";
  case GroupKind::Contraction: return "contraction";
  case GroupKind::Constant: return "constant";
  case GroupKind::Alias: return "alias";
  case GroupKind::Opaque: return "opaque";
  }
  KILN_UNREACHABLE("unknown group kind");
}

namespace {

template <typename T, typename Fn> std::string listStr(const std::vector<T> &items, Fn &&show) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : ", ") + show(items[i]);
  return out + "]";
}

/// A double-quoted Graphviz string.
std::string dotQuoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

} // namespace

std::string printFusionPlan(const ir::Graph &graph, const FusionPlan &plan) {
  ValueNames names(graph);
  std::string out;
  for (const FusionGroup &group : plan.groups) {
    out += fmt::format("group {} {} root={}", group.id, groupKindName(group.kind),
                       names(group.root->result()));
    if (group.anchor != nullptr)
      out += " anchor=" + names(group.anchor->result());
    out += " nodes=" + listStr(group.nodes, [&](const ir::Node *n) { return names(n->result()); });
    out += " inputs=" + listStr(group.inputs, [&](const ir::Value *v) { return names(v); });
    out += " ops=" + listStr(group.nodes, [](const ir::Node *n) { return std::string(n->name()); });
    out += "\n";
  }
  return out;
}

// Graphviz keeps a node in one cluster only, so a duplicated scalar or iota
// gets one dot node per group that recomputes it ("g<group>_<value>").
std::string fusionPlanToDot(const ir::Graph &graph, const FusionPlan &plan) {
  ValueNames names(graph);
  // Materialized values: graph leaves and group roots, drawn once.
  std::unordered_map<const ir::Value *, std::string> shared;
  std::string out = "digraph " + dotQuoted("fusion " + graph.name()) + " {\n";
  out += "  node [shape=box, fontname=\"monospace\"];\n";
  int leaf = 0;
  for (const auto *leaves : {&graph.inputs(), &graph.params()})
    for (const ir::Value *value : *leaves) {
      std::string id = "leaf" + std::to_string(leaf++);
      shared[value] = id;
      out += fmt::format("  {} [shape=ellipse, label={}];\n", id,
                         dotQuoted(names(value) + ": " + value->type().str()));
    }
  for (const FusionGroup &group : plan.groups)
    shared[group.root->result()] =
        fmt::format("g{}_{}", group.id, names(group.root->result()).substr(1));

  std::string edges;
  for (const FusionGroup &group : plan.groups) {
    auto localId = [&](const ir::Value *value) {
      return fmt::format("g{}_{}", group.id, names(value).substr(1));
    };
    out += fmt::format("  subgraph cluster_{} {{\n", group.id);
    out += fmt::format("    label={};\n",
                       dotQuoted(fmt::format("group {} {}", group.id, groupKindName(group.kind))));
    for (const ir::Node *node : group.nodes) {
      std::string style;
      if (node == group.anchor)
        style = ", style=filled, fillcolor=lightgrey";
      else if (node == group.root)
        style = ", style=bold";
      out +=
          fmt::format("    {} [label={}{}];\n", localId(node->result()),
                      dotQuoted(names(node->result()) + " = " + std::string(node->name())), style);
      for (const ir::Value *operand : node->operands()) {
        bool internal =
            operand->definingNode() != nullptr && group.contains(operand->definingNode());
        auto found = shared.find(operand);
        std::string from = internal                ? localId(operand)
                           : found != shared.end() ? found->second
                                                   : std::string("unknown");
        edges += fmt::format("  {} -> {};\n", from, localId(node->result()));
      }
    }
    out += "  }\n";
  }
  out += edges;
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const ir::GraphOutput &output = graph.outputs()[i];
    auto found = shared.find(output.value);
    out +=
        fmt::format("  out{} [shape=ellipse, label={}];\n", i, dotQuoted("output " + output.name));
    out += fmt::format("  {} -> out{};\n", found != shared.end() ? found->second : "unknown", i);
  }
  out += "}\n";
  return out;
}

} // namespace kiln::passes
