// Fusion: partitions a verified graph into groups, each one kernel with one
// materialized result (rules in docs/passes.md, "Fusion").
//
// Two sweeps. The first, in topological order, lets each anchor claim the
// elementwise epilogue that follows it, so a free op between two anchors goes
// to the earlier one's epilogue rather than the later one's prologue
// (conv2d -> add -> relu -> max_pool2d fuses as [conv2d add relu] [max_pool2d]).
// The second, consumer first, grows every group upward from its root: a node
// joins the group of its users when they all sit in one group and the group's
// rules allow it.
#include "passes/graph/Fusion.h"

#include "passes/graph/FusionRules.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace kiln::passes {

using namespace fusion;

namespace {

constexpr int kNone = -1;

/// A group under construction: node positions in no particular order.
struct Draft {
  int root = kNone;
  int anchor = kNone;
  /// Nothing joins a closed group: a large constant, an opaque op.
  bool closed = false;
  std::vector<int> members;
  /// The materialized values members read and no member computes: the
  /// kernel's arguments, at most kMaxKernelInputs of them.
  std::unordered_set<const ir::Value *> inputs;
};

class FusionPlanner {
public:
  explicit FusionPlanner(const ir::Graph &graph);

  Expected<FusionPlan> plan();

private:
  const ir::Node &node(int position) const { return *order_[position]; }
  bool isAnchor(int position) const { return role_[position] == FusionRole::Anchor; }
  int size() const { return static_cast<int>(order_.size()); }

  Expected<void> rejectComposites() const;
  void claimEpilogue(int anchor);
  void assignGroups();
  bool tryJoin(int position, int group);
  void addKernelArguments(const ir::Value *value,
                          std::unordered_set<const ir::Value *> &arguments) const;
  size_t inputsAfterJoin(int position, const Draft &draft) const;
  void markMaterializedDuplicates();
  bool epilogueAllows(int anchor, int group) const;
  int newDraft(int root);
  void placeDuplicatedNodes();
  FusionPlan buildPlan() const;

  const ir::Graph &graph_;
  std::vector<const ir::Node *> order_;
  std::unordered_map<const ir::Node *, int> position_;
  // Indexed by position in order_.
  std::vector<FusionRole> role_;
  std::vector<std::vector<int>> users_; ///< Distinct users, in topological order.
  std::vector<bool> isOutput_;
  std::vector<int> claimedBy_; ///< The anchor whose epilogue claims the node.
  std::vector<bool> forcedRoot_;
  std::vector<int> groupOf_;
  std::vector<bool> feedsAnchor_;  ///< The node is its group's anchor or computes its operands.
  std::vector<bool> materialized_; ///< For duplicated nodes: computed once, in their own group.
  /// Its group reads the node's value at gathered positions (readsGathered), directly or
  /// through data movement.
  std::vector<bool> readGathered_;
  /// The longest path from the node down to its group's root, in ops.
  std::vector<int> height_;
  std::vector<Draft> drafts_;
};

FusionPlanner::FusionPlanner(const ir::Graph &graph) : graph_(graph) {
  for (const ir::Node *node : graph.topologicalOrder())
    order_.push_back(node);
  if (order_.size() != graph.numNodes())
    return; // a cycle: plan() reports it before looking at anything else
  int n = size();
  for (int i = 0; i < n; ++i)
    position_[order_[i]] = i;
  role_.resize(n);
  users_.resize(n);
  isOutput_.assign(n, false);
  claimedBy_.assign(n, kNone);
  forcedRoot_.assign(n, false);
  groupOf_.assign(n, kNone);
  feedsAnchor_.assign(n, false);
  materialized_.assign(n, false);
  readGathered_.assign(n, false);
  height_.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    role_[i] = fusionRole(*order_[i]);
    for (const ir::Use &use : order_[i]->result()->uses())
      users_[i].push_back(position_.at(use.user));
    std::sort(users_[i].begin(), users_[i].end());
    users_[i].erase(std::unique(users_[i].begin(), users_[i].end()), users_[i].end());
  }
  for (const ir::GraphOutput &output : graph.outputs())
    if (const ir::Node *producer = output.value->definingNode())
      isOutput_[position_.at(producer)] = true;
}

Expected<void> FusionPlanner::rejectComposites() const {
  ValueNames names(graph_);
  for (int i = 0; i < size(); ++i) {
    if (role_[i] != FusionRole::Decomposable)
      continue;
    const ir::Node &composite = node(i);
    std::optional<Location> where;
    if (composite.location().known())
      where = composite.location();
    return makeError(ErrorCode::Unsupported,
                     fmt::format("fusion: {} ({}) has no kernel of its own; decompose it first "
                                 "(the 'decompose' pass)",
                                 composite.name(), names(composite.result())),
                     where);
  }
  return {};
}

// Grows the anchor's epilogue breadth first through elementwise ops of its
// shape, and keeps the largest stage at which the region has one exit (one
// node whose value leaves it or is an output): that node becomes a root, and
// the region's other nodes belong to this anchor's epilogue.
void FusionPlanner::claimEpilogue(int anchor) {
  std::vector<int> region = {anchor};
  std::vector<bool> inRegion(size(), false);
  inRegion[anchor] = true;
  size_t bestSize = 1;
  int bestExit = kNone;
  for (int stage = 0; stage < kMaxFusedDepth; ++stage) {
    if (std::any_of(region.begin(), region.end(), [&](int m) { return isOutput_[m]; }))
      break; // an output is materialized: nothing may follow it inside the group
    std::vector<int> next;
    for (int member : region)
      for (int user : users_[member])
        if (!inRegion[user])
          next.push_back(user);
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    if (next.empty())
      break;
    bool allowed = std::all_of(next.begin(), next.end(), [&](int user) {
      return isEpilogueOp(node(user), node(anchor)) && claimedBy_[user] == kNone;
    });
    if (!allowed)
      break;
    for (int user : next) {
      region.push_back(user);
      inRegion[user] = true;
    }
    int exits = 0, exit = kNone;
    for (int member : region) {
      bool leaves = isOutput_[member] || users_[member].empty() ||
                    std::any_of(users_[member].begin(), users_[member].end(),
                                [&](int user) { return !inRegion[user]; });
      if (leaves) {
        ++exits;
        exit = member;
      }
    }
    if (exits == 1) {
      bestSize = region.size();
      bestExit = exit;
    }
  }
  if (bestSize == 1)
    return;
  for (size_t i = 1; i < bestSize; ++i)
    claimedBy_[region[i]] = anchor;
  forcedRoot_[bestExit] = true;
}

int FusionPlanner::newDraft(int root) {
  Draft draft;
  draft.root = root;
  draft.members = {root};
  if (isAnchor(root)) {
    draft.anchor = root;
    feedsAnchor_[root] = true;
    draft.closed = anchorKind(node(root)) == GroupKind::Opaque;
  }
  // A reshape of a contraction's operand stays an alias (rule 4): its producer's
  // kernel then writes the same bytes in its own shape, with no index division.
  bool reshapesOperand = isAliasOp(node(root)) && !users_[root].empty() &&
                         std::all_of(users_[root].begin(), users_[root].end(), [&](int user) {
                           return isAnchor(user) && takesNoPrologue(node(user));
                         });
  draft.closed = draft.closed || role_[root] == FusionRole::Constant || reshapesOperand;
  for (const ir::Value *operand : node(root).operands())
    addKernelArguments(operand, draft.inputs);
  drafts_.push_back(std::move(draft));
  int id = static_cast<int>(drafts_.size()) - 1;
  groupOf_[root] = id;
  return id;
}

// An anchor joining `group` turns every node of the group that depends on it
// into its epilogue; those must all be epilogue ops, and none may belong to
// another anchor's claimed epilogue.
bool FusionPlanner::epilogueAllows(int anchor, int group) const {
  std::vector<int> pending(users_[anchor]);
  std::vector<bool> seen(size(), false);
  while (!pending.empty()) {
    int member = pending.back();
    pending.pop_back();
    if (seen[member])
      continue;
    seen[member] = true;
    if (!isEpilogueOp(node(member), node(anchor)) ||
        (claimedBy_[member] != kNone && claimedBy_[member] != anchor))
      return false;
    for (int user : users_[member])
      if (groupOf_[user] == group)
        pending.push_back(user);
  }
  return true;
}

/// The materialized values a kernel reading `value` takes as arguments: `value` itself, or,
/// for a duplicated node's value recomputed inside the kernel, what the copy reads.
void FusionPlanner::addKernelArguments(const ir::Value *value,
                                       std::unordered_set<const ir::Value *> &arguments) const {
  const ir::Node *producer = value->definingNode();
  int source = producer == nullptr ? kNone : position_.at(producer);
  if (source == kNone || role_[source] != FusionRole::Duplicated || materialized_[source]) {
    arguments.insert(value);
    return;
  }
  for (const ir::Value *operand : producer->operands())
    addKernelArguments(operand, arguments);
}

/// The group's argument count once `position` joins: its result is computed
/// inside, its operands are read.
size_t FusionPlanner::inputsAfterJoin(int position, const Draft &draft) const {
  std::unordered_set<const ir::Value *> read; // the node's arguments, before the draft's
  for (const ir::Value *operand : node(position).operands())
    addKernelArguments(operand, read);
  size_t added = std::count_if(read.begin(), read.end(), [&](const ir::Value *value) {
    return !draft.inputs.contains(value);
  });
  return draft.inputs.size() - draft.inputs.count(node(position).result()) + added;
}

bool FusionPlanner::tryJoin(int position, int group) {
  Draft &draft = drafts_[group];
  if (draft.closed)
    return false;
  int height = 0;
  for (int user : users_[position])
    height = std::max(height, height_[user] + 1);
  if (height > kMaxFusedDepth || inputsAfterJoin(position, draft) > kMaxKernelInputs)
    return false;
  bool feeds = std::any_of(users_[position].begin(), users_[position].end(),
                           [&](int user) { return feedsAnchor_[user]; });
  // A value read through a gather's indices may be read many times an element (Winograd's
  // input transform reads each pixel 16 times): computed inside the kernel, it would be
  // computed at every read. Only data movement, which computes nothing, joins such a reader.
  const ir::Value *result = node(position).result();
  bool gathered = std::any_of(users_[position].begin(), users_[position].end(), [&](int user) {
    return readsGathered(node(user), result) ||
           (readGathered_[user] && node(user).info().category == ir::OpCategory::DataMovement);
  });
  if (gathered && node(position).info().category != ir::OpCategory::DataMovement)
    return false;
  if (isAnchor(position)) {
    if (draft.anchor != kNone || anchorKind(node(position)) == GroupKind::Opaque ||
        !epilogueAllows(position, group))
      return false;
    draft.anchor = position;
    feeds = true;
  } else if (feeds && draft.anchor != kNone && takesNoPrologue(node(draft.anchor))) {
    return false;
  }
  feedsAnchor_[position] = feeds;
  readGathered_[position] = gathered;
  height_[position] = height;
  draft.members.push_back(position);
  draft.inputs.erase(node(position).result());
  for (const ir::Value *operand : node(position).operands())
    addKernelArguments(operand, draft.inputs);
  groupOf_[position] = group;
  return true;
}

void FusionPlanner::assignGroups() {
  for (int i = size() - 1; i >= 0; --i) {
    if (role_[i] == FusionRole::Duplicated)
      continue;
    const std::vector<int> &users = users_[i];
    bool mustBeRoot =
        isOutput_[i] || users.empty() || forcedRoot_[i] || role_[i] == FusionRole::Constant;
    int group = users.empty() ? kNone : groupOf_[users.front()];
    bool oneGroup =
        std::all_of(users.begin(), users.end(), [&](int user) { return groupOf_[user] == group; });
    if (mustBeRoot || !oneGroup || !tryJoin(i, group))
      newDraft(i);
  }
}

// A duplicated node is recomputed inside each group that reads it, unless a
// kernel needs it in memory: it is an output, or a contraction or opaque
// anchor reads it. Then it is computed once and every reader takes it as input.
void FusionPlanner::markMaterializedDuplicates() {
  for (int i = 0; i < size(); ++i)
    materialized_[i] =
        role_[i] == FusionRole::Duplicated &&
        (isOutput_[i] || std::any_of(users_[i].begin(), users_[i].end(), [&](int user) {
           return isAnchor(user) && takesNoPrologue(node(user));
         }));
}

void FusionPlanner::placeDuplicatedNodes() {
  for (int i = 0; i < size(); ++i)
    if (materialized_[i])
      newDraft(i);
  for (Draft &draft : drafts_) {
    // Copies read the duplicated nodes they are built from (a broadcast of an iota): those
    // are copied too.
    std::vector<int> copies, pending = draft.members;
    while (!pending.empty()) {
      int member = pending.back();
      pending.pop_back();
      for (const ir::Value *operand : node(member).operands()) {
        const ir::Node *producer = operand->definingNode();
        if (producer == nullptr)
          continue;
        int source = position_.at(producer);
        if (role_[source] == FusionRole::Duplicated && !materialized_[source] &&
            std::find(copies.begin(), copies.end(), source) == copies.end()) {
          copies.push_back(source);
          pending.push_back(source);
        }
      }
    }
    std::sort(copies.begin(), copies.end());
    draft.members.insert(draft.members.end(), copies.begin(), copies.end());
  }
}

GroupKind kindOf(const FusionGroup &group) {
  if (group.anchor != nullptr)
    return anchorKind(*group.anchor);
  if (group.root->kind() == ir::OpKind::Constant)
    return GroupKind::Constant;
  if (std::all_of(group.nodes.begin(), group.nodes.end(),
                  [](const ir::Node *n) { return isAliasOp(*n); }))
    return GroupKind::Alias;
  return GroupKind::Pointwise;
}

FusionPlan FusionPlanner::buildPlan() const {
  // Every edge between groups runs from a root to a later node, so ordering
  // groups by root position is a topological order of the group graph.
  std::vector<const Draft *> sorted;
  for (const Draft &draft : drafts_)
    sorted.push_back(&draft);
  std::sort(sorted.begin(), sorted.end(),
            [](const Draft *a, const Draft *b) { return a->root < b->root; });
  FusionPlan plan;
  for (const Draft *draft : sorted) {
    FusionGroup group;
    group.id = static_cast<int>(plan.groups.size());
    std::vector<int> members = draft->members;
    std::sort(members.begin(), members.end());
    for (int member : members)
      group.nodes.push_back(order_[member]);
    group.root = order_[draft->root];
    KILN_CHECK(group.nodes.back() == group.root, "a fusion group's root must come last");
    group.anchor = draft->anchor == kNone ? nullptr : order_[draft->anchor];
    group.kind = kindOf(group);
    for (const ir::Node *member : group.nodes)
      for (const ir::Value *operand : member->operands()) {
        const ir::Node *producer = operand->definingNode();
        bool internal = producer != nullptr &&
                        std::binary_search(members.begin(), members.end(), position_.at(producer));
        if (!internal &&
            std::find(group.inputs.begin(), group.inputs.end(), operand) == group.inputs.end())
          group.inputs.push_back(operand);
      }
    plan.groups.push_back(std::move(group));
  }
  return plan;
}

Expected<FusionPlan> FusionPlanner::plan() {
  if (order_.size() != graph_.numNodes())
    return makeError(ErrorCode::VerifyError,
                     fmt::format("fusion: graph @{} has a cycle; verify it first", graph_.name()));
  KILN_TRY_VOID(rejectComposites());
  for (int i = 0; i < size(); ++i)
    if (isAnchor(i) && anchorKind(node(i)) != GroupKind::Opaque)
      claimEpilogue(i);
  markMaterializedDuplicates();
  assignGroups();
  placeDuplicatedNodes();
  return buildPlan();
}

} // namespace

bool needsKernel(const FusionGroup &group) {
  // A collective is a plan step that calls the communicator, not a kernel.
  return group.kind != GroupKind::Alias && group.kind != GroupKind::Constant &&
         group.root->info().category != ir::OpCategory::Collective &&
         group.root->type().numElements() > 0;
}

bool isDepthwiseConv2D(const ir::Node &node) {
  if (node.kind() != ir::OpKind::Conv2D)
    return false;
  bool nhwc = ir::getString(node.attrs(), "layout") == "nhwc";
  int64_t groups = ir::getInt(node.attrs(), "groups");
  int64_t inChannels = node.operand(0)->type().shape[nhwc ? 3 : 1];
  int64_t outChannels = node.type().shape[nhwc ? 3 : 1];
  return groups == inChannels && groups == outChannels;
}

bool FusionGroup::contains(const ir::Node *node) const {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

const FusionGroup *FusionPlan::groupOf(const ir::Node *node) const {
  for (const FusionGroup &group : groups)
    if (group.contains(node))
      return &group;
  return nullptr;
}

Expected<FusionPlan> planFusion(const ir::Graph &graph) { return FusionPlanner(graph).plan(); }

} // namespace kiln::passes
