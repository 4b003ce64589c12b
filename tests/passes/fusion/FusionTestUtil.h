// Helpers shared by the fusion tests: parsing IR text, planning, and an
// independent checker of every invariant a fusion plan must keep.
#pragma once

#include "ir/graph/Graph.h"
#include "ir/graph/Parser.h"
#include "passes/graph/Fusion.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::testing {

inline std::unique_ptr<ir::Graph> parseOrFail(std::string_view text) {
  auto graph = ir::parseGraph(text);
  if (!graph)
    FAIL("parse failed: " << graph.error().str());
  return std::move(*graph);
}

inline passes::FusionPlan planOrFail(const ir::Graph &graph) {
  auto plan = passes::planFusion(graph);
  if (!plan)
    FAIL("planFusion failed: " << plan.error().str());
  return std::move(*plan);
}

/// The plan's listing, one string per group.
inline std::vector<std::string> listingLines(const ir::Graph &graph,
                                             const passes::FusionPlan &plan) {
  std::string text = passes::printFusionPlan(graph, plan);
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

/// Scalar constants, iotas and data movement of constants and iotas may be recomputed in
/// several groups.
inline bool isDuplicable(const ir::Node &node) {
  if (node.kind() == ir::OpKind::Iota ||
      (node.kind() == ir::OpKind::Constant && node.type().numElements() == 1))
    return true;
  if (node.info().category != ir::OpCategory::DataMovement || node.numOperands() == 0)
    return false;
  for (const ir::Value *operand : node.operands()) {
    const ir::Node *producer = operand->definingNode();
    if (producer == nullptr ||
        (producer->kind() != ir::OpKind::Constant && producer->kind() != ir::OpKind::Iota))
      return false;
  }
  return true;
}

inline bool isAnchorOp(const ir::Node &node) {
  return node.info().category == ir::OpCategory::Reduction ||
         node.info().category == ir::OpCategory::Contraction;
}

/// Checks what every plan must satisfy, whatever grouping it chose:
/// - every node is in exactly one group, except duplicable ones (isDuplicable),
///   which may be copied into several groups (or none, when dead);
/// - a group's nodes are in topological order with the root last, and every
///   non-root node has all its users in the group (a copied scalar or iota:
///   in groups holding a copy) and is not an output;
/// - at most one anchor per group, the recorded one; the kind follows from it;
/// - `inputs` are the values read from outside the group, each once, in order
///   of first use, and each is a graph input, a parameter or an earlier group's root;
/// - contraction anchors read only inputs; epilogue ops are elementwise of the
///   anchor's shape;
/// - every output computed by a node is a group root;
/// - the group graph is acyclic (checked by Kahn's algorithm, independently of
///   the order) and the plan's order is topological.
inline void checkPlanInvariants(const ir::Graph &graph, const passes::FusionPlan &plan) {
  using passes::GroupKind;
  std::vector<ir::Node *> order = graph.topologicalOrder();
  REQUIRE(order.size() == graph.numNodes());
  std::unordered_map<const ir::Node *, size_t> position;
  for (size_t i = 0; i < order.size(); ++i)
    position[order[i]] = i;
  std::unordered_map<const ir::Node *, std::vector<int>> groupsOf;
  std::unordered_map<const ir::Value *, int> rootGroup;
  for (size_t id = 0; id < plan.groups.size(); ++id) {
    const passes::FusionGroup &group = plan.groups[id];
    INFO("group " << id);
    REQUIRE(group.id == static_cast<int>(id));
    REQUIRE(!group.nodes.empty());
    REQUIRE(group.nodes.back() == group.root);
    for (size_t i = 1; i < group.nodes.size(); ++i)
      REQUIRE(position.at(group.nodes[i - 1]) < position.at(group.nodes[i]));
    for (const ir::Node *node : group.nodes)
      groupsOf[node].push_back(static_cast<int>(id));
    REQUIRE(rootGroup.count(group.root->result()) == 0);
    rootGroup[group.root->result()] = static_cast<int>(id);
  }
  for (const ir::Node *node : order) {
    INFO("node " << node->name() << " at " << position.at(node));
    size_t copies = groupsOf[node].size();
    if (!isDuplicable(*node) || rootGroup.count(node->result()) != 0)
      REQUIRE(copies == 1);
  }
  for (const ir::GraphOutput &output : graph.outputs())
    if (output.value->definingNode() != nullptr)
      REQUIRE(rootGroup.count(output.value) == 1);

  std::vector<std::vector<int>> consumers(plan.groups.size());
  std::vector<int> indegree(plan.groups.size(), 0);
  for (const passes::FusionGroup &group : plan.groups) {
    INFO("group " << group.id << " " << passes::groupKindName(group.kind));
    std::vector<const ir::Node *> anchors;
    for (const ir::Node *node : group.nodes)
      if (isAnchorOp(*node))
        anchors.push_back(node);
    REQUIRE(anchors.size() <= 1);
    REQUIRE(group.anchor == (anchors.empty() ? nullptr : anchors.front()));

    std::vector<const ir::Value *> expectedInputs;
    for (const ir::Node *node : group.nodes) {
      if (node != group.root) {
        REQUIRE(!graph.isOutput(node->result()));
        // A copy of a scalar or iota serves its group; the other users'
        // groups hold copies of their own.
        for (const ir::Use &use : node->result()->uses()) {
          if (isDuplicable(*node)) {
            // A user in no group is a dead copy of its own (a broadcast of an unused iota).
            const passes::FusionGroup *userGroup = plan.groupOf(use.user);
            if (userGroup == nullptr)
              REQUIRE(isDuplicable(*use.user));
            else
              REQUIRE(userGroup->contains(node));
          } else
            REQUIRE(group.contains(use.user));
        }
      }
      for (const ir::Value *operand : node->operands()) {
        bool internal =
            operand->definingNode() != nullptr && group.contains(operand->definingNode());
        if (!internal && std::find(expectedInputs.begin(), expectedInputs.end(), operand) ==
                             expectedInputs.end())
          expectedInputs.push_back(operand);
      }
    }
    REQUIRE(group.inputs == expectedInputs);
    // The input bound: a kernel takes at most kMaxKernelInputs arguments
    // (copied scalars and iotas are members, not inputs), unless it is one
    // node wider than that.
    if (group.inputs.size() > passes::kMaxKernelInputs)
      REQUIRE(group.root->numOperands() > passes::kMaxKernelInputs);
    // The depth bound: no chain inside the group longer than kMaxFusedDepth
    // ops (a copied scalar or iota adds one level above it).
    std::unordered_map<const ir::Node *, int> height;
    for (auto node = group.nodes.rbegin(); node != group.nodes.rend(); ++node) {
      int longest = 0;
      for (const ir::Use &use : (*node)->result()->uses())
        if (auto user = height.find(use.user); user != height.end() && group.contains(use.user))
          longest = std::max(longest, user->second + 1);
      height[*node] = longest;
      if (!isDuplicable(**node))
        REQUIRE(longest <= passes::kMaxFusedDepth);
    }
    std::vector<int> producers;
    for (const ir::Value *input : group.inputs) {
      if (input->definingNode() == nullptr)
        continue;
      REQUIRE(rootGroup.count(input) == 1); // read from memory: materialized
      int producer = rootGroup.at(input);
      REQUIRE(producer < group.id); // the plan's order is topological
      if (std::find(producers.begin(), producers.end(), producer) == producers.end())
        producers.push_back(producer);
    }
    for (int producer : producers) {
      consumers[producer].push_back(group.id);
      ++indegree[group.id];
    }

    if (group.anchor != nullptr) {
      if (group.kind == GroupKind::Contraction)
        for (const ir::Value *operand : group.anchor->operands())
          REQUIRE(std::find(group.inputs.begin(), group.inputs.end(), operand) !=
                  group.inputs.end());
      // Everything after the anchor inside the group is its epilogue.
      std::vector<const ir::Node *> pending;
      for (const ir::Use &use : group.anchor->result()->uses())
        pending.push_back(use.user);
      while (!pending.empty()) {
        const ir::Node *node = pending.back();
        pending.pop_back();
        if (!group.contains(node))
          continue;
        REQUIRE(node->info().category == ir::OpCategory::Elementwise);
        REQUIRE(node->type().shape == group.anchor->type().shape);
        for (const ir::Use &use : node->result()->uses())
          pending.push_back(use.user);
      }
    } else if (group.root->kind() == ir::OpKind::Constant) {
      REQUIRE(group.kind == GroupKind::Constant);
    } else {
      bool alias = std::all_of(group.nodes.begin(), group.nodes.end(), [](const ir::Node *n) {
        return n->kind() == ir::OpKind::Reshape || n->kind() == ir::OpKind::Squeeze ||
               n->kind() == ir::OpKind::Unsqueeze;
      });
      REQUIRE(group.kind == (alias ? GroupKind::Alias : GroupKind::Pointwise));
    }
  }

  // Kahn's algorithm: every group is reached once all its producers are.
  std::vector<int> ready;
  for (size_t id = 0; id < plan.groups.size(); ++id)
    if (indegree[id] == 0)
      ready.push_back(static_cast<int>(id));
  size_t visited = 0;
  while (!ready.empty()) {
    int id = ready.back();
    ready.pop_back();
    ++visited;
    for (int consumer : consumers[id])
      if (--indegree[consumer] == 0)
        ready.push_back(consumer);
  }
  REQUIRE(visited == plan.groups.size());
}

} // namespace kiln::testing
